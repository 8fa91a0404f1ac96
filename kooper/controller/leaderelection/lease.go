package leaderelection

// The Lease protocol: how a replica acquires, renews, releases and
// observes the coordination.k8s.io/v1 Lease. Every write carries the
// resourceVersion this replica last saw, so the API server refuses it if
// anyone wrote in between: of two replicas racing for the Lease, one
// wins and the other gets a conflict. Time decides the rest, on each
// replica's own clock only:
//
//   - A standby deems the holder gone once the Lease has not changed for
//     its leaseDurationSeconds since this replica first saw its current
//     version. The holder wrote that version before anyone could see it,
//     so the expiry is never earlier than the holder's own renewal plus
//     the duration, whatever the clocks say (renewTime is for people, and
//     is never compared with this replica's clock).
//   - A leader leads until the start of its last successful renewal plus
//     RenewDeadline (below LeaseDuration): a renewal that started later
//     was written later still. Past that, it stops handling, even if the
//     Lease is still its own.
//
// The fields are the ones client-go's elector writes (Kubernetes' own
// components use it), so replicas of a kooper version built on it, in a
// rolling upgrade, see ours as we see theirs: acquireTime and
// leaseTransitions change when the holder does, renewTime at every
// write, and a released Lease has no holder.

import (
	"context"
	"errors"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/internal/logkey"
	"github.com/kooperkit/kooper/kooper/log"
)

var (
	// errExpired ends leading: no renewal succeeded within RenewDeadline.
	errExpired = errors.New("not renewed within the renew deadline")
	// errTaken ends leading: another replica holds the Lease, or it was
	// deleted.
	errTaken = errors.New("held by another replica")
)

// elector is one Runner's side of the protocol.
type elector struct {
	leases   coordinationv1client.LeaseInterface
	name     string
	identity string
	cfg      Config // the timings
	clock    clock.WithTickerAndDelayedExecution
	log      log.Logger

	mu      sync.Mutex
	known   bool                  // something was seen, absence included
	seen    *coordinationv1.Lease // the Lease as last seen; nil if absent
	seenAt  time.Time             // when this replica first saw seen's version
	changed chan struct{}         // told when seen changes
}

func newElector(cfg Config, clk clock.WithTickerAndDelayedExecution, logger log.Logger) *elector {
	return &elector{
		leases: cfg.Client.Leases(cfg.Namespace), name: cfg.Name, identity: cfg.Identity,
		cfg: cfg, clock: clk, log: logger, changed: make(chan struct{}, 1),
	}
}

// see notes the Lease as read or watched (nil: absent). Only a new
// version moves seenAt: the expiry runs from the first sight of a version.
func (e *elector) see(l *coordinationv1.Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.known && (l == nil) == (e.seen == nil) && (l == nil || l.ResourceVersion == e.seen.ResourceVersion) {
		return
	}
	e.known, e.seen, e.seenAt = true, l, e.clock.Now()
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// read gets the Lease and notes it.
func (e *elector) read(ctx context.Context) {
	l, err := e.leases.Get(ctx, e.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		e.see(nil)
	case err != nil:
		e.log.Debug("could not read the lease", logkey.Err, err)
	default:
		e.see(l)
	}
}

// freeIn returns the Lease as last seen, whether anything was, and how
// long until this replica may take it: 0 when it is absent, released (no
// holder) or this replica's identity's (a previous run of it), else the
// holder's duration after this replica first saw the current version.
func (e *elector) freeIn(now time.Time) (l *coordinationv1.Lease, known bool, wait time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.known || e.seen == nil {
		return nil, e.known, 0
	}
	if h := holder(e.seen); h == "" || h == e.identity {
		return e.seen, true, 0
	}
	return e.seen, true, e.seenAt.Add(e.durationOf(e.seen)).Sub(now)
}

// acquire tries to take the Lease at once, then whenever it may be free:
// every RetryPeriod after reading it, and as soon as watch shows it
// released, deleted or expired. It returns the Lease as written and when
// the winning write started, or false once ctx is done.
func (e *elector) acquire(ctx context.Context) (*coordinationv1.Lease, time.Time, bool) {
	tick := e.clock.NewTicker(e.cfg.RetryPeriod)
	defer tick.Stop()
	var expiry clock.Timer // armed for the holder's expiry
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	lastHolder, read := "", true
	for {
		if read {
			e.read(ctx)
		}
		start := e.clock.Now()
		seen, known, wait := e.freeIn(start)
		var expired <-chan time.Time
		switch {
		case !known:
		case wait <= 0:
			l, err := e.take(ctx, seen, start)
			if err == nil {
				return l, start, true
			}
			// A conflict: another replica won, and the watch or the next
			// read shows its version.
			e.log.Debug("could not acquire the lease", logkey.Err, err)
		default:
			if h := holder(seen); h != lastHolder {
				lastHolder = h
				e.log.Info("standing by", "leader", h)
			}
			if expiry != nil {
				expiry.Stop()
			}
			expiry = e.clock.NewTimer(wait)
			expired = expiry.C()
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, false
		case <-tick.C():
			read = true
		case <-e.changed:
			read = false
		case <-expired:
			read = false
		}
	}
}

// take writes this replica into the Lease last seen as l, or creates it
// when l is nil, starting at now.
func (e *elector) take(ctx context.Context, l *coordinationv1.Lease, now time.Time) (*coordinationv1.Lease, error) {
	t := &metav1.MicroTime{Time: now}
	if l == nil {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: e.name},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(e.identity), LeaseDurationSeconds: ptr.To(e.seconds()),
				AcquireTime: t, RenewTime: t, LeaseTransitions: ptr.To[int32](0),
			},
		}
		got, err := e.leases.Create(ctx, l, metav1.CreateOptions{})
		if err == nil {
			e.see(got)
		}
		return got, err
	}
	l = l.DeepCopy()
	if holder(l) != e.identity { // a new holder, or the same one after a release
		l.Spec.HolderIdentity = ptr.To(e.identity)
		l.Spec.AcquireTime = t
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.RenewTime = t
	l.Spec.LeaseDurationSeconds = ptr.To(e.seconds())
	got, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err == nil {
		e.see(got)
	}
	return got, err
}

// hold renews the Lease l, which this replica wrote with a request that
// started at until - RenewDeadline, every RetryPeriod until ctx is done or
// leading ends: then it calls lose with errExpired (no renewal succeeded
// within RenewDeadline of the start of the last one that did: the
// deadline fires even while a request hangs) or errTaken, and stops
// renewing. renewed is told each new deadline. hold returns the Lease as
// this replica last wrote it, for release.
func (e *elector) hold(ctx context.Context, l *coordinationv1.Lease, until time.Time, lose func(error), renewed func(until time.Time)) *coordinationv1.Lease {
	deadline := e.clock.AfterFunc(until.Sub(e.clock.Now()), func() { lose(errExpired) })
	defer func() { deadline.Stop() }()
	tick := e.clock.NewTicker(e.cfg.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return l
		case <-tick.C():
		}
		start := e.clock.Now()
		if !start.Before(until) { // the deadline is due
			lose(errExpired)
			return l
		}
		next, err := e.renew(ctx, l, start)
		switch {
		case errors.Is(err, errTaken):
			lose(err)
			return l
		case err != nil:
			e.log.Debug("could not renew the lease", logkey.Err, err)
			continue
		case !deadline.Stop():
			return next // the deadline passed during the request: too late
		}
		l, until = next, start.Add(e.cfg.RenewDeadline)
		deadline = e.clock.AfterFunc(until.Sub(e.clock.Now()), func() { lose(errExpired) })
		renewed(until)
	}
}

// renew writes the Lease l again with a new renewTime, starting at now.
// On a conflict it reads the Lease: errTaken if it names another holder;
// otherwise the conflicting write was this replica's own (an earlier
// renewal whose answer was lost) or touched no holder, and it tries again
// on that version.
func (e *elector) renew(ctx context.Context, l *coordinationv1.Lease, now time.Time) (*coordinationv1.Lease, error) {
	for {
		l = l.DeepCopy()
		l.Spec.RenewTime = &metav1.MicroTime{Time: now}
		got, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return got, nil
		case apierrors.IsNotFound(err):
			return nil, errTaken // deleted: anyone may create it
		case !apierrors.IsConflict(err):
			return nil, err
		}
		if l, err = e.leases.Get(ctx, e.name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, errTaken
			}
			return nil, err
		}
		if holder(l) != e.identity {
			return nil, errTaken
		}
	}
}

// release writes the Lease l, which this replica last wrote, free: no
// holder, and a duration of 1s for any reader that only looks at the
// time (client-go's elector writes the same). It never frees another
// holder's Lease: the write carries l's resourceVersion, and after a
// conflict it goes on only if a fresh read still names this replica.
// The runnables must have returned first.
func (e *elector) release(ctx context.Context, l *coordinationv1.Lease) error {
	for {
		l = l.DeepCopy()
		now := &metav1.MicroTime{Time: e.clock.Now()}
		l.Spec.HolderIdentity = ptr.To("")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](1)
		l.Spec.AcquireTime, l.Spec.RenewTime = now, now
		_, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
		if l, err = e.leases.Get(ctx, e.name, metav1.GetOptions{}); err != nil {
			return err
		}
		if holder(l) != e.identity {
			return nil // someone else's now: nothing to release
		}
	}
}

// watch notes every change of the Lease until ctx is done, so that
// acquire tries when it is released or deleted, and from when it first
// saw the holder's last renewal. It only speeds acquire up: where the
// watch fails (no RBAC verb watch on leases, say), acquire's reads every
// RetryPeriod take the Lease over; the failure is logged once.
func (e *elector) watch(ctx context.Context) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", e.name).String()}
	logged := false
	for ctx.Err() == nil {
		w, err := e.leases.Watch(ctx, opts)
		if err == nil {
			e.follow(ctx, w)
		} else if !logged && ctx.Err() == nil {
			logged = true
			e.log.Info("cannot watch the lease, a release or an expiry is seen at the next retry", logkey.Err, err)
		}
		select { // closed or refused: again later
		case <-ctx.Done():
		case <-e.clock.After(e.cfg.RetryPeriod):
		}
	}
}

// follow notes w's events until w ends or ctx is done; it stops w.
func (e *elector) follow(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return
			}
			l, ok := ev.Object.(*coordinationv1.Lease)
			switch {
			case !ok || l.Name != e.name: // a fake client ignores the selector
			case ev.Type == watch.Deleted:
				e.see(nil)
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				e.see(l)
			}
		}
	}
}

// durationOf is how long l's holder claims it after each write: its
// leaseDurationSeconds, or this replica's LeaseDuration if it has none.
func (e *elector) durationOf(l *coordinationv1.Lease) time.Duration {
	if s := ptr.Deref(l.Spec.LeaseDurationSeconds, 0); s > 0 {
		return time.Duration(s) * time.Second
	}
	return e.cfg.LeaseDuration
}

// seconds is LeaseDuration in whole seconds, rounded up: a standby that
// reads it never waits less than this replica leads.
func (e *elector) seconds() int32 {
	return int32((e.cfg.LeaseDuration + time.Second - 1) / time.Second)
}

func holder(l *coordinationv1.Lease) string { return ptr.Deref(l.Spec.HolderIdentity, "") }
