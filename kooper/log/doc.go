// Package log is the small logging interface every Kooper package writes to.
//
// A [Logger] has four levels and structured key/values, nothing more, so that
// any logging library can sit behind it: this package ships [Noop] (the
// default everywhere) and [NewStd] (plain key=value lines on an io.Writer);
// the subpackages logrus and slog adapt github.com/sirupsen/logrus and the
// standard library's log/slog.
//
// Messages are constant strings; the data goes in key/values. Kooper's own
// entries use one vocabulary of keys, so that the logs of every controller
// can be searched the same way; an operator's handlers are best written
// with the same keys, as strings or constants of their own:
//
//	| key        | value                                                     |
//	|------------|-----------------------------------------------------------|
//	| controller | the controller's configured name                          |
//	| object     | an object key: "namespace/name" or "name"                 |
//	| worker     | a worker's index                                          |
//	| attempt    | the handlings of one key since its last success, from 1   |
//	| reasons    | why a key was queued since its last handling (a list)     |
//	| err        | an error                                                  |
//	| identity   | a leader election or sharding candidate's identity        |
//	| lease      | a Lease, as "namespace/name"                              |
//	| logger     | the klog logger an entry routed by [RouteKlog] came from  |
//
// Kooper logs lifecycle at Info and everything per object at Debug.
//
// client-go itself logs through klog (leader election, the event recorder,
// a reflector whose list fails). [RouteKlog], called once in main, sends
// that to the same Logger, so a program's output has one format.
package log
