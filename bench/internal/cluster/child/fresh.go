package child

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/track"
)

// The Fresh conversation, one controller whose every handling sleeps
// HandlerDelay, with resyncs every Resync:
//
//  1. Backlog, at the first handling of a seeded pod: the initial backlog
//     is being handled. The parent creates FreshPods pods in
//     FreshNamespaces[0].
//  2. FreshHandled (phase "sync") once those and every seeded pod were
//     handled. A resync before then fails the run (Resync too short).
//  3. Resyncing, once ResyncStarted seeded pods were handled again: a
//     resync is being handled. The parent creates FreshPods pods in
//     FreshNamespaces[1].
//  4. FreshHandled (phase "resync") once those were handled.
//  5. Stopped, once the parent closed stdin.

// ResyncStarted is how many repeated handlings of seeded pods (with no
// change to them) mean that a resync is under way.
const ResyncStarted = 30

// Backlog says that a backlog of unchanged pods is being handled.
type Backlog struct {
	// Handled is how many seeded pods were handled (in this pass) so far.
	Handled int `json:"handled"`
}

// FreshPhase is the handling of the pods created in one phase.
type FreshPhase struct {
	// Phase is "sync" (created during the initial backlog) or "resync".
	Phase string `json:"phase"`
	// Pods is how many were created and handled.
	Pods int `json:"pods"`
	// P50, P99 and Max are of the latencies: first handling minus the
	// parent's send time (in the pod's annotation, set just before the
	// create request).
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
	// Behind is how many seeded pods were still to be handled in this pass
	// when the last created pod was handled: 0 when the created pods
	// waited for the whole backlog.
	Behind int `json:"behind"`
	// Backlog is the initial backlog's time, first to last seeded pod's
	// first handling (phase "sync" only).
	Backlog time.Duration `json:"backlog,omitempty"`
}

// FreshPhases are the two phases' names, in order.
var FreshPhases = [2]string{"sync", "resync"}

func (e *env) fresh() error {
	a := e.a
	seeded := track.New(a.Pods, 0, "")
	created := [2]*track.Tracker{track.New(0, a.FreshPods, a.Token), track.New(0, a.FreshPods, a.Token)}
	handle := func(obj metav1.Object) {
		switch obj.GetNamespace() {
		case a.FreshNamespaces[0]:
			created[0].Handle(obj)
		case a.FreshNamespaces[1]:
			created[1].Handle(obj)
		default:
			seeded.Handle(obj)
		}
		time.Sleep(a.HandlerDelay)
	}
	running := e.start([]impls.Handler{handle}, impls.Options{Resync: a.Resync})
	defer running.cancel()
	seen := func() string { return fmt.Sprintf("%d/%d seeded pods handled", seeded.Seen(), a.Pods) }

	if err := running.wait(a.Timeout, seeded.FirstSeen(), seen); err != nil {
		return err
	}
	if err := e.out.Encode(Message{Backlog: &Backlog{Handled: seeded.Seen()}}); err != nil {
		return fmt.Errorf("could not report the backlog: %w", err)
	}
	if err := running.wait(a.Timeout, created[0].AllChurned(), func() string {
		return fmt.Sprintf("%d/%d created pods handled, %s", created[0].Churned(), a.FreshPods, seen())
	}); err != nil {
		return err
	}
	behind := a.Pods - seeded.Seen()
	if err := running.wait(a.Timeout, seeded.AllSeen(), seen); err != nil {
		return err
	}
	if n := seeded.Calls(); n > int64(a.Pods) {
		return fmt.Errorf("seeded pods were handled %d times before the initial backlog was done: a resync began too soon, raise the resync period (%s)", n, a.Resync)
	}
	phase := freshPhase(FreshPhases[0], created[0], behind)
	phase.Backlog = seeded.AllSeenAt().Sub(seeded.FirstSeenAt())
	if err := e.out.Encode(Message{FreshHandled: &phase}); err != nil {
		return fmt.Errorf("could not report the created pods: %w", err)
	}

	// Wait for the resync, then report it under way.
	resyncing := make(chan struct{})
	stopPoll := make(chan struct{})
	defer close(stopPoll)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for seeded.Calls() < int64(a.Pods+ResyncStarted) {
			select {
			case <-tick.C:
			case <-stopPoll:
				return
			}
		}
		close(resyncing)
	}()
	again := func() int { return int(seeded.Calls()) - a.Pods }
	if err := running.wait(a.Resync+a.Timeout, resyncing, func() string {
		return fmt.Sprintf("%d seeded pods handled again, waiting for a resync", again())
	}); err != nil {
		return err
	}
	if err := e.out.Encode(Message{Resyncing: &Backlog{Handled: again()}}); err != nil {
		return fmt.Errorf("could not report the resync: %w", err)
	}
	if err := running.wait(a.Timeout, created[1].AllChurned(), func() string {
		return fmt.Sprintf("%d/%d created pods handled, %d seeded pods handled again", created[1].Churned(), a.FreshPods, again())
	}); err != nil {
		return err
	}
	phase = freshPhase(FreshPhases[1], created[1], max(a.Pods-again(), 0))
	if err := e.out.Encode(Message{FreshHandled: &phase}); err != nil {
		return fmt.Errorf("could not report the created pods: %w", err)
	}
	return running.stop()
}

func freshPhase(name string, tr *track.Tracker, behind int) FreshPhase {
	ls := tr.Latencies()
	return FreshPhase{
		Phase:  name,
		Pods:   len(ls),
		P50:    track.Percentile(ls, 0.50),
		P99:    track.Percentile(ls, 0.99),
		Max:    slices.Max(ls),
		Behind: behind,
	}
}
