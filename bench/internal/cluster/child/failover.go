package child

import (
	"fmt"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/proc"
	"github.com/kooperkit/kooper/bench/internal/cluster/track"
)

// The Failover conversation, one replica per child, both on one Lease:
//
//  1. The leader (RoleLeader, started alone) reports Synced once it handled
//     every seeded pod.
//  2. The standby (RoleStandby, started next) waits StandbySettle, fails if
//     it handled anything, and reports StandingBy with its memory.
//  3. The parent stops the leader (closes its stdin: Stopped follows) or
//     kills it (SIGKILL), noting the time.
//  4. The standby reports TookOver once it handled every seeded pod, with
//     the wall-clock times of its first and last handling, so the parent
//     measures from its own stop time (same machine, same clock).
//  5. The parent closes the standby's stdin: Stopped.

// Standby is a standby's state before the leader stops.
type Standby struct {
	// Settle is how long it stood by before this report.
	Settle time.Duration `json:"settle"`
	// Heap is the settled heap (two GCs) now minus the one before the
	// implementation started, in bytes: the standby's cache, if warm.
	Heap int64 `json:"heap"`
	// RSS is VmRSS in bytes now.
	RSS uint64 `json:"rss"`
	// Requests are the HTTP requests made so far.
	Requests []string `json:"requests"`
}

// Takeover is what the standby did once it led.
type Takeover struct {
	// FirstAt and AllAt are the Unix nanoseconds of its first handling and
	// of the first handling of the last seeded pod it had not handled yet.
	FirstAt int64 `json:"firstAt"`
	AllAt   int64 `json:"allAt"`
	// HandlerCalls counts its handlings until then.
	HandlerCalls int64 `json:"handlerCalls"`
	// Requests are the HTTP requests made after StandingBy: the takeover's.
	Requests []string `json:"requests"`
}

func (e *env) failover() error {
	a := e.a
	tr := track.New(a.Pods, 0, "")
	handle := impls.Handler(tr.Handle)
	heap0 := proc.SettledHeap()
	t0 := time.Now()
	election := a.Election
	running := e.start([]impls.Handler{handle}, impls.Options{Election: &election})
	defer running.cancel()
	progress := func() string { return fmt.Sprintf("%d/%d pods handled", tr.Seen(), a.Pods) }

	if a.Role == RoleLeader {
		if err := running.wait(a.Timeout, tr.AllSeen(), progress); err != nil {
			return err
		}
		if err := e.out.Encode(Message{Synced: &Sync{
			Controllers:  1,
			Pods:         a.Pods,
			Elapsed:      tr.AllSeenAt().Sub(t0),
			FirstHandled: tr.FirstSeenAt().Sub(t0),
			HandlerCalls: tr.Calls(),
			Requests:     e.reqs.snapshot(),
		}}); err != nil {
			return fmt.Errorf("could not report the sync: %w", err)
		}
		return running.stop()
	}

	// A standby: nothing may be handled while the leader leads.
	settled := make(chan struct{})
	timer := time.AfterFunc(a.StandbySettle, func() { close(settled) })
	defer timer.Stop()
	if err := running.wait(a.StandbySettle+time.Minute, settled, progress); err != nil {
		return fmt.Errorf("standing by: %w", err)
	}
	if n := tr.Calls(); n > 0 {
		return fmt.Errorf("the standby handled %d times while the leader led", n)
	}
	heap1 := proc.SettledHeap()
	mem, err := proc.ReadMemory()
	if err != nil {
		return err
	}
	before := e.reqs.counts()
	if err := e.out.Encode(Message{StandingBy: &Standby{
		Settle:   time.Since(t0),
		Heap:     int64(heap1) - int64(heap0),
		RSS:      mem.RSS,
		Requests: e.reqs.snapshot(),
	}}); err != nil {
		return fmt.Errorf("could not report standing by: %w", err)
	}
	// The parent stops the leader now; the Lease bounds the wait.
	if err := running.wait(a.Timeout+a.Election.LeaseDuration, tr.AllSeen(), progress); err != nil {
		return fmt.Errorf("taking over: %w", err)
	}
	if err := e.out.Encode(Message{TookOver: &Takeover{
		FirstAt:      tr.FirstSeenAt().UnixNano(),
		AllAt:        tr.AllSeenAt().UnixNano(),
		HandlerCalls: tr.Calls(),
		Requests:     e.reqs.since(before),
	}}); err != nil {
		return fmt.Errorf("could not report the takeover: %w", err)
	}
	return running.stop()
}
