// Package logrus adapts a github.com/sirupsen/logrus logger to Kooper's
// [log.Logger], so a program that already logs with logrus can hand the same
// logger to every Kooper package:
//
//	l := logrus.New()
//	l.SetLevel(logrus.DebugLevel)
//	cfg.Logger = kooperlogrus.New(l)
//
// Each key/value pair becomes a logrus field. Keys that are not strings are
// formatted with fmt.Sprint, and a trailing key without a value gets the
// value "(MISSING)", the same as [log.NewStd]. Fields are a map, so when a key
// repeats (in With and again in the call) the last value wins.
//
// Levels map one to one (Debug to logrus.DebugLevel, and so on), and the
// logrus logger's own level decides what is written: an entry below it costs
// a level check and nothing else. Formatting, output and hooks stay the
// logrus logger's business. With logrus's ReportCaller on, the reported
// caller is this adapter, not the Kooper code that logged: logrus skips only
// its own frames.
package logrus
