// Package impls wires each compared controller implementation to the
// benchmark's source and no-op handler, one file per implementation.
//
// Every implementation runs 3 workers with resync off and no logging, reads
// the same in-memory source (a memsource.Source, or its client-go
// ListerWatcher view) and calls handle once per handled key with the object
// it would give user code.
package impls

import (
	"context"
	"io"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kooperkit/kooper/bench/internal/memsource"
)

// Workers is how many workers every implementation runs.
const Workers = 3

// Impl is one controller implementation under test.
type Impl interface {
	// Name identifies the implementation in flags and reports.
	Name() string
	// Run runs the implementation against src, calling handle for every
	// handled key, until ctx is done. It returns once everything it started
	// has stopped (for libraries whose Run returns earlier, as soon as their
	// Run returns: the harness then waits for stray goroutines).
	Run(ctx context.Context, src *memsource.Source, handle func(runtime.Object)) error
}

// All returns every implementation, in report order.
func All() []Impl {
	return []Impl{Kooper{}, KooperV2{}, ControllerRuntime{}, Floor{}}
}

// Names of the implementations returned by All.
const (
	NameKooper            = "kooper"
	NameKooperV2          = "kooper-v2"
	NameControllerRuntime = "controller-runtime"
	// NameControllerRuntimePQ is controller-runtime with its priority
	// queue, compared in the fresh-first run only.
	NameControllerRuntimePQ = "controller-runtime-pq"
	NameFloor               = "floor"
)

// SilenceLogs discards klog (client-go) and controller-runtime logs, so no
// implementation pays for log output. Call it once before any run.
func SilenceLogs() {
	klog.SetLogger(logr.Discard())
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	ctrllog.SetLogger(logr.Discard())
}
