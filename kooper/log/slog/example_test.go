package slog_test

import (
	stdslog "log/slog"
	"os"

	kooperslog "github.com/kooperkit/kooper/kooper/log/slog"
)

// Kooper logging through the program's slog handler. The handler's level
// decides what is written; ReplaceAttr drops the time here only to keep the
// output reproducible.
func ExampleNew() {
	h := stdslog.NewTextHandler(os.Stdout, &stdslog.HandlerOptions{
		Level: stdslog.LevelInfo,
		ReplaceAttr: func(groups []string, a stdslog.Attr) stdslog.Attr {
			if len(groups) == 0 && a.Key == stdslog.TimeKey {
				return stdslog.Attr{}
			}
			return a
		},
	})

	logger := kooperslog.New(stdslog.New(h)).With("controller", "pod-terminator")
	logger.Debug("not written: below the handler level")
	logger.Info("controller started")
	logger.Warn("could not handle object", "object", "default/web-0", "attempt", 2)
	// Output:
	// level=INFO msg="controller started" controller=pod-terminator
	// level=WARN msg="could not handle object" controller=pod-terminator object=default/web-0 attempt=2
}
