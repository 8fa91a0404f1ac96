// Package impls runs each compared controller implementation over every pod
// of a real API server, one file per implementation, with the benchmark's
// no-op handler.
//
// Every implementation runs 3 workers per controller with resync off and no
// logging, reads pods through a typed client built from the same
// rest.Config (protobuf, and client-go's streamed initial list where the
// library lets client-go choose), and calls its controller's Handler once
// per handled key with the object it would give user code.
package impls

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Workers is how many workers every controller runs.
const Workers = 3

// Handler is one controller's handler: it gets the object (a *corev1.Pod,
// or a *metav1.PartialObjectMetadata for a metadata-only cache).
type Handler func(obj metav1.Object)

// Impl is one controller implementation under test.
type Impl interface {
	// Name identifies the implementation in flags and reports.
	Name() string
	// Run runs one controller per handler in this process, over every pod
	// of the cluster cfg points at, until ctx is done. It returns once the
	// library's Run (or Start) returned for every controller.
	Run(ctx context.Context, cfg *rest.Config, handlers []Handler, opts Options) error
}

// Options are what a scenario asks of an implementation besides its
// handlers. The zero value is the throughput scenarios' setting: resync
// off, no leader election.
type Options struct {
	// Resync is the resync period: every cached pod is handled again this
	// often. 0 turns resyncs off.
	Resync time.Duration
	// Election, when set, runs the controllers as one replica of an
	// operator: they handle only while this process holds the Lease.
	Election *Election
}

// Election is the leader election one replica competes in, with the same
// Lease timings for every implementation.
type Election struct {
	// Namespace and Name of the Lease.
	Namespace, Name string
	// LeaseDuration, RenewDeadline and RetryPeriod are the Lease timings
	// (client-go's leader election: 15s, 10s and 2s are everyone's
	// defaults).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// ErrNoElection is returned by the implementations that have no leader
// election of their own.
var ErrNoElection = errors.New("this implementation has no leader election")

// Names of the implementations, in report order.
const (
	NameKooper         = "kooper"
	NameKooperMetadata = "kooper-metadata"
	// NameKooperCold is Kooper under leader election with
	// DisableWarmStandby: a standby starts its controllers only once it
	// leads. Without an election it is NameKooper.
	NameKooperCold        = "kooper-cold"
	NameKooperV2          = "kooper-v2"
	NameControllerRuntime = "controller-runtime"
	// NameControllerRuntimeWarmup is controller-runtime with EnableWarmup:
	// a standby starts its controllers' sources before it leads.
	NameControllerRuntimeWarmup = "controller-runtime-warmup"
	// NameControllerRuntimePQ is controller-runtime with its priority
	// queue (UsePriorityQueue, its default since v0.23).
	NameControllerRuntimePQ = "controller-runtime-pq"
	NameFloor               = "floor"
)

// All returns every implementation, in report order.
func All() []Impl {
	return []Impl{
		Kooper{},
		Kooper{Metadata: true},
		Kooper{ColdStandby: true},
		KooperV2{},
		ControllerRuntime{},
		ControllerRuntime{Warmup: true},
		ControllerRuntime{PriorityQueue: true},
		Floor{},
	}
}

// Get returns the implementation named name.
func Get(name string) (Impl, error) {
	all := All()
	i := slices.IndexFunc(all, func(impl Impl) bool { return impl.Name() == name })
	if i < 0 {
		return nil, fmt.Errorf("unknown implementation %q", name)
	}
	return all[i], nil
}

// runEach runs run for every handler concurrently and returns once all
// returned: the first error cancels the others.
func runEach(ctx context.Context, handlers []Handler, run func(ctx context.Context, i int, h Handler) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for i, h := range handlers {
		g.Go(func() error { return run(gctx, i, h) })
	}
	return g.Wait()
}
