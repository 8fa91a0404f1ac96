package logrus_test

import (
	"os"

	"github.com/sirupsen/logrus"

	kooperlogrus "github.com/kooperkit/kooper/kooper/log/logrus"
)

// A logrus logger, configured as usual, handed to Kooper. The logrus level
// decides what is written; key/values become fields.
func ExampleNew() {
	l := logrus.New()
	l.SetOutput(os.Stdout)
	l.SetLevel(logrus.InfoLevel)
	l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableColors: true})

	logger := kooperlogrus.New(l).With("controller", "pod-terminator")
	logger.Debug("not written: below the logrus level")
	logger.Info("controller started")
	logger.Warn("could not handle object", "object", "default/web-0", "attempt", 2)
	// Output:
	// level=info msg="controller started" controller=pod-terminator
	// level=warning msg="could not handle object" attempt=2 controller=pod-terminator object=default/web-0
}

// A *logrus.Entry works too: its fields are kept on every Kooper entry.
func ExampleNew_entry() {
	l := logrus.New()
	l.SetOutput(os.Stdout)
	l.SetFormatter(&logrus.JSONFormatter{DisableTimestamp: true})

	logger := kooperlogrus.New(l.WithField("app", "shop"))
	logger.Info("leading", "identity", "pod-a")
	// Output:
	// {"app":"shop","identity":"pod-a","level":"info","msg":"leading"}
}
