// Package log is the small logging interface every Kooper package writes to.
//
// A [Logger] has four levels and structured key/values, nothing more, so that
// any logging library can sit behind it: this package ships [Noop] (the
// default everywhere) and [NewStd] (plain key=value lines on an io.Writer);
// the subpackages logrus and slog adapt github.com/sirupsen/logrus and the
// standard library's log/slog.
//
// Messages are constant strings; the data goes in key/values whose keys come
// from the vocabulary declared here ([KeyController], [KeyObject], ...) so that
// logs of every controller can be searched the same way. Kooper logs
// lifecycle at Info and everything per object at Debug.
//
// client-go itself logs through klog (leader election, the event recorder,
// a reflector whose list fails). [RouteKlog], called once in main, sends
// that to the same Logger, so a program's output has one format.
package log
