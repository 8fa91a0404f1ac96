package log_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/klog/v2"

	"github.com/kooperkit/kooper/kooper/log"
)

// NewStd writes one logfmt-style line per entry. DisableTime keeps the output
// reproducible; leave it off in a real program.
func ExampleNewStd() {
	logger := log.NewStd(os.Stdout, log.StdOptions{Level: log.LevelInfo, DisableTime: true})

	logger.Debug("not written: below the level")
	logger.Info("controller started", "controller", "pod-terminator")
	logger.Error("could not handle object",
		"object", "default/web-0",
		"err", errors.New("pods \"web-0\" is forbidden"))
	// Output:
	// level=info msg="controller started" controller=pod-terminator
	// level=error msg="could not handle object" object=default/web-0 err="pods \"web-0\" is forbidden"
}

// With returns a child Logger that adds its key/values to every entry, the
// way a controller tags each worker's logs.
func ExampleLogger_with() {
	logger := log.NewStd(os.Stdout, log.StdOptions{Level: log.LevelDebug, DisableTime: true})
	ctrl := logger.With("controller", "pod-terminator")
	worker := ctrl.With("worker", 0)

	worker.Debug("handling object", "object", "default/web-0", "attempt", 1)
	ctrl.Info("controller stopped")
	// Output:
	// level=debug msg="handling object" controller=pod-terminator worker=0 object=default/web-0 attempt=1
	// level=info msg="controller stopped" controller=pod-terminator
}

// ParseLevel turns a flag value into a Level.
func ExampleParseLevel() {
	for _, s := range []string{"debug", "WARN", "verbose"} {
		level, err := log.ParseLevel(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(level)
	}
	// Output:
	// debug
	// warn
	// error: unknown log level "verbose", want debug, info, warn or error
}

// RouteKlog sends what client-go logs through klog (here called directly,
// as client-go's reflector and leader election do) to a Logger, so an
// operator's output has one format.
func ExampleRouteKlog() {
	logger := log.NewStd(os.Stdout, log.StdOptions{Level: log.LevelDebug, DisableTime: true})
	restore := log.RouteKlog(logger)
	defer restore()

	klog.InfoS("attempting to acquire leader lease", "lease", "kooper-pod-terminator/pod-terminator")
	klog.V(4).InfoS("not written: klog's -v is 0")
	klog.ErrorS(errors.New(`podterminators.chaos.kooperkit.io is forbidden`), "failed to list *v1alpha1.PodTerminator")
	klog.FromContext(context.Background()).WithName("reflector").Info("watch closed")
	// Output:
	// level=info msg="attempting to acquire leader lease" lease=kooper-pod-terminator/pod-terminator
	// level=error msg="failed to list *v1alpha1.PodTerminator" err="podterminators.chaos.kooperkit.io is forbidden"
	// level=info msg="watch closed" logger=reflector
}
