// Package slog adapts a standard library [log/slog.Logger] to Kooper's
// [log.Logger], so Kooper's entries go through the same handler as the rest
// of a program:
//
//	l := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
//	cfg.Logger = kooperslog.New(l)
//
// Key/values become attributes. Keys that are not strings are formatted with
// fmt.Sprint and a trailing key without a value gets the value "(MISSING)",
// the same as [log.NewStd] (slog itself would write them under "!BADKEY").
//
// Levels map one to one: Debug to slog.LevelDebug, Info to slog.LevelInfo,
// Warn to slog.LevelWarn and Error to slog.LevelError. The handler's Enabled
// decides what is written, and it is asked before any attribute is built.
// The source location a handler records (HandlerOptions.AddSource) is the
// Kooper code that logged, not this adapter.
//
// [log.Logger] methods take no context, so the handler sees
// context.Background(), as it does for slog.Logger's own Info and Debug.
package slog
