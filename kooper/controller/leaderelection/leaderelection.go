package leaderelection

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kooperkit/kooper/kooper/log"
)

var (
	// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
	ErrInvalidConfig = errors.New("invalid leader election config")
	// ErrLeaseLost is returned by Run when this replica lost the Lease while
	// leading. Its controllers were stopped.
	ErrLeaseLost = errors.New("leader election lease lost")
)

// Runnable is what a Runner runs while leading: a *controller.Controller or
// anything else that works until its context is done. If it has a
// ShutdownTimeout() time.Duration method, New checks it against the Lease
// timings.
type Runnable interface {
	Run(ctx context.Context) error
}

// Warmer is a Runnable that can get ready while this replica stands by: a
// *controller.Controller, whose RunWarm fills and keeps its cache but
// handles nothing until leading is closed.
type Warmer interface {
	Runnable
	RunWarm(ctx context.Context, leading <-chan struct{}) error
}

// Recorder receives the leader status; kooper/metrics/prometheus implements it.
type Recorder interface {
	SetLeader(name string, leading bool)
}

// Config configures a Runner.
type Config struct {
	// Disabled runs the runnables at once, holding no Lease: for a single
	// replica (a development run, a test). Name, Namespace and Client are
	// then not needed, and the Recorder is never called.
	Disabled bool

	// Name is the Lease's name, also used in logs and metrics. Required
	// unless Disabled.
	Name string
	// Namespace is the Lease's namespace, usually the operator's. Required
	// unless Disabled.
	Namespace string
	// Client reads and writes the Lease, e.g. clientset.CoordinationV1().
	// Required unless Disabled.
	Client coordinationv1client.LeasesGetter
	// Identity names this replica in the Lease. Default: the host name plus
	// a random suffix, unique per process.
	Identity string

	// LeaseDuration is how long a standby waits after the holder's last
	// renewal before taking the Lease over. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying a renewal before
	// it gives up leading. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between acquisition or renewal attempts.
	// Default 2s.
	RetryPeriod time.Duration
	// DisableReleaseOnCancel keeps the Lease held after a clean shutdown, so
	// a standby waits LeaseDuration before taking over.
	DisableReleaseOnCancel bool
	// DisableWarmStandby starts the runnables only once this replica leads.
	// By default a standby is warm: the runnables that can (Warmer, such as
	// a *controller.Controller) fill and keep their caches while it stands
	// by, and start handling the moment it leads, so a takeover waits for
	// no list. The price is memory: a standby holds the same caches as the
	// leader, and keeps a watch open on the API server for each.
	DisableWarmStandby bool

	// Logger receives the runner's logs. Default log.Noop.
	Logger log.Logger
	// Recorder receives the leader status. Default: none.
	Recorder Recorder
}

// Defaults of Config's timings.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

func (c *Config) defaults() {
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline <= 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod <= 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	if c.Logger == nil {
		c.Logger = log.Noop
	}
	if c.Recorder == nil {
		c.Recorder = noopRecorder{}
	}
}

func (c Config) validate(runnables []Runnable) error {
	if len(runnables) == 0 {
		return fmt.Errorf("%w: nothing to run", ErrInvalidConfig)
	}
	if c.Disabled {
		return nil // no Lease: nothing else to check
	}
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: name is required", ErrInvalidConfig)
	case c.Namespace == "":
		return fmt.Errorf("%w: namespace is required", ErrInvalidConfig)
	case c.Client == nil:
		return fmt.Errorf("%w: client is required", ErrInvalidConfig)
	case c.RenewDeadline >= c.LeaseDuration:
		return fmt.Errorf("%w: renew deadline %s must be below lease duration %s", ErrInvalidConfig, c.RenewDeadline, c.LeaseDuration)
	case c.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(c.RetryPeriod)):
		return fmt.Errorf("%w: renew deadline %s must be above %.1f x retry period %s", ErrInvalidConfig, c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod)
	}
	budget := c.LeaseDuration - c.RenewDeadline - c.RetryPeriod
	for _, r := range runnables {
		st, ok := r.(interface{ ShutdownTimeout() time.Duration })
		if ok && st.ShutdownTimeout() >= budget {
			return fmt.Errorf("%w: shutdown timeout %s must be below lease duration - renew deadline - retry period = %s, or a new leader could start while this one still handles",
				ErrInvalidConfig, st.ShutdownTimeout(), budget)
		}
	}
	return nil
}

// Runner runs Runnables while holding a Lease, or at once when
// Config.Disabled. Build one with New.
type Runner struct {
	cfg       Config
	runnables []Runnable
	log       log.Logger
	// leading is what Leading reports; lead sets it.
	leading atomic.Bool
}

// New returns a Runner that runs every one of runnables (for example the
// controllers of one operator) while it holds the Lease. Errors wrap
// ErrInvalidConfig.
func New(cfg Config, runnables ...Runnable) (*Runner, error) {
	cfg.defaults()
	if err := cfg.validate(runnables); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if !cfg.Disabled {
		logger = logger.With(log.KeyLease, cfg.Namespace+"/"+cfg.Name, log.KeyIdentity, cfg.Identity)
	}
	return &Runner{cfg: cfg, runnables: runnables, log: logger}, nil
}

// Leading reports whether this replica holds the Lease and runs its
// runnables: from when it acquires the Lease until it loses it or the
// runnables return. Always false when Config.Disabled. Safe for concurrent
// use.
func (r *Runner) Leading() bool { return r.leading.Load() }

// Standby reports whether leader election is on and this replica does not
// lead: it is ready to take over. A new Runner is a standby until it
// acquires the Lease. Always false when Config.Disabled. Safe for
// concurrent use.
func (r *Runner) Standby() bool { return !r.cfg.Disabled && !r.leading.Load() }

// WarmStandby reports whether this replica keeps warm runnables running
// while it stands by: leader election is on, Config.DisableWarmStandby is
// not set, and at least one runnable is a Warmer.
func (r *Runner) WarmStandby() bool {
	if r.cfg.Disabled || r.cfg.DisableWarmStandby {
		return false
	}
	for _, run := range r.runnables {
		if _, ok := run.(Warmer); ok {
			return true
		}
	}
	return false
}

// Run runs the runnables until ctx is done; if one returns, the others are
// stopped too.
//
// With leader election, Run competes for the Lease and runs the runnables
// only while it holds it. It returns nil after a clean shutdown (whether it
// led or stood by), ErrLeaseLost when the Lease was lost while leading, or
// the runnables' error.
//
// When Config.Disabled, Run runs the runnables at once and returns the first
// error any of them returned, or nil.
func (r *Runner) Run(ctx context.Context) error {
	if r.cfg.Disabled {
		return r.runAll(ctx, r.runnables)
	}
	return r.elect(ctx)
}

// lead records whether this replica leads, for Leading and the Recorder.
func (r *Runner) lead(leading bool) {
	r.leading.Store(leading)
	r.cfg.Recorder.SetLeader(r.cfg.Name, leading)
}

// renewed is told that this replica wrote itself into the Lease with a
// request sent at start: its runnables that can (a *controller.Controller)
// may handle until start plus RenewDeadline, by which client-go's elector
// gives up leading unless it renewed again. A replica paused past it, or
// cut off from the API server, takes no key when it wakes up and cancels
// its handlings, before its elector notices: a standby takes over no
// sooner than LeaseDuration after the renewal, later than that.
func (r *Runner) renewed(start time.Time) {
	until := start.Add(r.cfg.RenewDeadline)
	for _, rn := range r.runnables {
		if v, ok := rn.(interface{ SetValidUntil(time.Time) }); ok {
			v.SetValidUntil(until)
		}
	}
}

// elect competes for the Lease and runs the runnables while holding it.
func (r *Runner) elect(ctx context.Context) error {
	lock := &observedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: r.cfg.Namespace, Name: r.cfg.Name},
		Client:     r.cfg.Client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: r.cfg.Identity},
	}, renewed: r.renewed}
	// The elector gets its own context, cancelled only after the runnables
	// returned: it keeps renewing the Lease while they drain, then releases
	// it (ReleaseOnCancel), so a standby never overlaps with this leader.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()

	var warm *warmup // set below, before the elector runs

	result := make(chan outcome, 1)
	electionCfg := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            r.cfg.Name,
		LeaseDuration:   r.cfg.LeaseDuration,
		RenewDeadline:   r.cfg.RenewDeadline,
		RetryPeriod:     r.cfg.RetryPeriod,
		ReleaseOnCancel: !r.cfg.DisableReleaseOnCancel,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				// Stop when the Lease is lost (leading is cancelled) or
				// when Run's caller stops us.
				runCtx, cancel := context.WithCancel(leading)
				stop := context.AfterFunc(ctx, cancel)
				defer stop()
				defer cancel()
				r.log.Info("leading")
				r.lead(true)
				err := r.runLeading(runCtx, warm)
				// The runnables returned: no longer leading, though the
				// Lease is held until the elector releases it. Said here
				// too because OnStoppedLeading can run before lead(true)
				// above, when the Lease is lost at once.
				r.lead(false)
				result <- outcome{err: err, lost: leading.Err() != nil && ctx.Err() == nil}
			},
			OnStoppedLeading: func() { r.lead(false) },
			OnNewLeader: func(identity string) {
				if identity != r.cfg.Identity {
					r.log.Info("standing by", "leader", identity)
				}
			},
		},
	}
	elector, err := leaderelection.NewLeaderElector(electionCfg)
	if err != nil {
		return fmt.Errorf("could not create the leader elector: %w", err)
	}
	r.lead(false)

	// A warm standby starts its warm runnables now; warmDone stays nil
	// (never ready) otherwise.
	var warmDone <-chan struct{}
	if r.WarmStandby() {
		warm = r.warmUp(ctx)
		warmDone = warm.done
	}

	// A standby watches the Lease, to try at once when it is released or
	// expires.
	restarting := &restartingElector{first: elector, lock: lock, cfg: electionCfg}
	var watcher sync.WaitGroup
	watcher.Go(func() { r.watchLease(electorCtx, lock, restarting.wake) })
	defer func() {
		stopElector()
		watcher.Wait()
	}()
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		restarting.run(electorCtx)
	}()

	shutdown := func() error {
		// Clean shutdown. If we lead (lock.acquired is set before the
		// elector starts OnStartedLeading, so it is never missed), wait for
		// the runnables, which see ctx, before letting the elector release.
		leading := lock.acquired.Load()
		var res outcome
		if leading {
			res = <-result
		}
		stopElector()
		<-electorDone
		if !leading && lock.acquired.Load() {
			// Acquired between the check and the stop: the runnables
			// started with ctx already done and return at once.
			res = <-result
		}
		if warm != nil {
			<-warm.done // standing by: the warm runnables see ctx too
		}
		return r.finish(res)
	}
	select {
	case <-ctx.Done():
		return shutdown()
	case <-warmDone:
		if ctx.Err() != nil {
			return shutdown()
		}
		if lock.acquired.Load() {
			// Leading: the other runnables are stopping; release the Lease
			// only once they have returned.
			res := <-result
			stopElector()
			<-electorDone
			return r.finish(res)
		}
		// A warm runnable returned while standing by: stop competing.
		stopElector()
		<-electorDone
		if lock.acquired.Load() {
			return r.finish(<-result) // acquired meanwhile: it stopped at once
		}
		err := warm.err
		if err == nil {
			err = errors.New("a runnable returned while standing by")
		}
		r.log.Error("stopped standing by", log.KeyErr, err)
		return err
	case res := <-result:
		// The runnables returned while leading: an error, or the Lease was
		// lost. Release the Lease (if still held) before returning.
		stopElector()
		<-electorDone
		return r.finish(res)
	case <-electorDone:
		// The elector only returns by itself after failing to renew; the
		// runnables are stopping.
		return r.finish(<-result)
	}
}

// warmup is the warm runnables of a warm standby, started before leading.
type warmup struct {
	cancel  context.CancelFunc
	leading chan struct{} // closed when this replica leads
	done    chan struct{} // closed once every warm runnable returned
	err     error         // the first error of a warm runnable, once done
	cold    []Runnable    // the runnables that are not Warmers
}

// warmUp starts every Warmer's RunWarm on a context of its own (from ctx);
// the first to return stops the others.
func (r *Runner) warmUp(ctx context.Context) *warmup {
	wctx, cancel := context.WithCancel(ctx)
	w := &warmup{cancel: cancel, leading: make(chan struct{}), done: make(chan struct{})}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for _, run := range r.runnables {
		warmer, ok := run.(Warmer)
		if !ok {
			w.cold = append(w.cold, run)
			continue
		}
		wg.Go(func() {
			err := warmer.RunWarm(wctx, w.leading)
			mu.Lock()
			if w.err == nil {
				w.err = err
			}
			mu.Unlock()
			cancel()
		})
	}
	go func() {
		wg.Wait()
		close(w.done)
	}()
	return w
}

// runLeading runs the runnables while leading, until ctx is done or one
// returns: with a warm standby, it tells the warm ones to handle and starts
// the others.
func (r *Runner) runLeading(ctx context.Context, w *warmup) error {
	if w == nil {
		return r.runAll(ctx, r.runnables)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopWarm := context.AfterFunc(ctx, w.cancel) // the Lease lost, or a shutdown
	defer stopWarm()
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-w.done: // a warm runnable returned: stop the others
			cancel()
		case <-ctx.Done():
		}
	})
	close(w.leading)
	var err error
	if len(w.cold) > 0 {
		err = r.runAll(ctx, w.cold) // until ctx is done or one returns
	} else {
		<-ctx.Done() // the Lease lost, a shutdown, or a warm runnable returned
	}
	cancel()
	<-w.done
	watch.Wait()
	if err == nil {
		err = w.err
	}
	return err
}

// outcome is how the runnables ended: their error, and whether it was
// because the Lease was lost.
type outcome struct {
	err  error
	lost bool
}

func (r *Runner) finish(res outcome) error {
	switch {
	case res.lost:
		r.log.Error("lost the lease, stopped handling", log.KeyErr, res.err)
		if res.err != nil {
			return fmt.Errorf("%w: %w", ErrLeaseLost, res.err)
		}
		return ErrLeaseLost
	case res.err != nil:
		r.log.Error("stopped leading", log.KeyErr, res.err)
		return res.err
	}
	r.log.Info("stopped")
	return nil
}

// runAll runs every one of runnables; the first to return stops the
// others.
func (r *Runner) runAll(ctx context.Context, runnables []Runnable) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, run := range runnables {
		wg.Go(func() {
			err := run.Run(ctx)
			mu.Lock()
			if firstErr == nil && err != nil {
				firstErr = err
			}
			mu.Unlock()
			cancel()
		})
	}
	wg.Wait()
	return firstErr
}

// observedLock records whether this replica ever wrote itself into the
// Lease, which the elector does right before it starts OnStartedLeading.
// Once abandoned (by a restartingElector, only while this replica never
// wrote itself into the Lease) it refuses every write until reopened, so
// that an elector being restarted can no longer acquire the Lease.
type observedLock struct {
	resourcelock.Interface
	acquired atomic.Bool

	mu        sync.Mutex // held across writes, so abandon waits for one in flight
	abandoned bool
	// renewed, if set, is told when a write of this replica into the Lease
	// that was sent at start succeeded.
	renewed func(start time.Time)

	// The Lease's record as last seen (by Get or by the watch) and when it
	// was first seen; the holder the last Get returned.
	seenMu     sync.Mutex
	lastRaw    []byte
	lastSeen   time.Time
	lastHolder string
}

// see notes that the Lease's record was raw at time at, and returns when
// this replica first saw that record (at, if it is a change).
func (l *observedLock) see(raw []byte, at time.Time) time.Time {
	l.seenMu.Lock()
	defer l.seenMu.Unlock()
	if !bytes.Equal(raw, l.lastRaw) {
		l.lastRaw, l.lastSeen = raw, at
	}
	return l.lastSeen
}

// Get reads the Lease like the LeaseLock, and notes what it saw. When
// another holder's record has not changed for its LeaseDuration since this
// replica first saw it (by the watch, usually within milliseconds of the
// renewal; client-go's own observation comes at its next poll), it returns
// the record with a negative LeaseDurationSeconds: an elector that sees it for the
// first time (one the watch just restarted at that expiry) then takes the
// Lease over at once, with the record's resourceVersion as precondition, as
// it would after its own wait. The holder wrote the record before this
// replica first saw it, so the expiry is never earlier than client-go's.
func (l *observedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err != nil || rec == nil {
		return rec, raw, err
	}
	now := time.Now()
	l.see(raw, now)
	l.seenMu.Lock()
	l.lastHolder = rec.HolderIdentity
	l.seenMu.Unlock()
	if rec.HolderIdentity == "" || rec.HolderIdentity == l.Identity() || rec.LeaseDurationSeconds <= 0 {
		return rec, raw, nil
	}
	l.seenMu.Lock()
	expired := now.Sub(l.lastSeen) >= time.Duration(rec.LeaseDurationSeconds)*time.Second
	l.seenMu.Unlock()
	if expired {
		// client-go deems a record valid until the time it first saw it
		// (just after this Get) plus LeaseDurationSeconds: a negative
		// duration says "expired that long ago".
		expiredRec := *rec
		expiredRec.LeaseDurationSeconds = -rec.LeaseDurationSeconds
		return &expiredRec, raw, nil
	}
	return rec, raw, nil
}

// errNotHolder is what the lock answers a release by a replica that no
// longer holds the Lease.
var errNotHolder = errors.New("not releasing the Lease")

// errAbandoned is what an abandoned lock answers a write.
var errAbandoned = errors.New("restarting the leader elector")

func (l *observedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.abandoned {
		return errAbandoned
	}
	start := time.Now()
	err := l.Interface.Create(ctx, rec)
	l.observe(rec, err)
	if err == nil && rec.HolderIdentity == l.Identity() && l.renewed != nil {
		l.renewed(start)
	}
	return err
}

func (l *observedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.abandoned {
		return errAbandoned
	}
	if rec.HolderIdentity == "" {
		// A release. client-go's reads the Lease first, for its
		// resourceVersion, but decides whether this replica leads from the
		// record it observed before: a leader whose renewals timed out (the
		// API server slow or cut off) while another replica took the Lease
		// over would release that replica's Lease, and a third would take
		// it too: two leaders. The fault tests found it (faults/); only the
		// holder the read returned may release.
		l.seenMu.Lock()
		holder := l.lastHolder
		l.seenMu.Unlock()
		if holder != l.Identity() {
			return fmt.Errorf("%w: %s holds it now", errNotHolder, holder)
		}
	}
	start := time.Now()
	err := l.Interface.Update(ctx, rec)
	l.observe(rec, err)
	if err == nil && rec.HolderIdentity == l.Identity() && l.renewed != nil {
		l.renewed(start)
	}
	return err
}

// abandon refuses every later write, unless this replica already wrote
// itself into the Lease; it reports whether it did.
func (l *observedLock) abandon() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acquired.Load() {
		return false
	}
	l.abandoned = true
	return true
}

// setAbandoned sets or clears the abandoned state.
func (l *observedLock) setAbandoned(abandoned bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.abandoned = abandoned
}

func (l *observedLock) isAbandoned() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.abandoned
}

func (l *observedLock) observe(rec resourcelock.LeaderElectionRecord, err error) {
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
}

// restartingElector runs client-go's leader elector, and restarts it when
// woken while this replica has never held the Lease: a new elector tries
// to acquire at once, where the running one would wait for its next retry
// (RetryPeriod plus up to 1.2 times as much jitter). watchLease wakes it
// when the holder releases the Lease, so a clean handover takes one watch
// event and one write instead of up to 2.2 retry periods, and when the
// holder's Lease expires (observedLock.Get then says so to the new
// elector), so a dead leader is replaced LeaseDuration after its last
// renewal instead of up to two jittered retry periods later. A restart cannot lose a
// race with an acquisition: the lock refuses writes once abandoned, and
// is abandoned only if this replica never wrote itself into it.
type restartingElector struct {
	first *leaderelection.LeaderElector
	lock  *observedLock
	cfg   leaderelection.LeaderElectionConfig

	mu     sync.Mutex
	cancel context.CancelFunc // the running elector's; nil before the first
}

// run runs electors until ctx is done or one returns by itself (it lost
// the Lease it held).
func (e *restartingElector) run(ctx context.Context) {
	elector := e.first
	for {
		attempt, cancel := context.WithCancel(ctx)
		e.mu.Lock()
		e.lock.setAbandoned(false)
		e.cancel = cancel
		e.mu.Unlock()
		elector.Run(attempt)
		cancel()
		if ctx.Err() != nil || !e.lock.isAbandoned() {
			return
		}
		// Woken: an elector that never acquired, so a new one is safe.
		next, err := leaderelection.NewLeaderElector(e.cfg)
		if err != nil {
			return // cannot happen: the same config built the first
		}
		elector = next
	}
}

// wake restarts the running elector, unless this replica has written
// itself into the Lease (it leads, or did).
func (e *restartingElector) wake() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil && e.lock.abandon() {
		e.cancel()
	}
}

// watchLease watches the Lease until ctx is done, noting every change in
// lock (see observedLock.Get), and calls wake whenever it sees the Lease
// released by a leader that stopped cleanly (no holder) or deleted, and
// when another holder's Lease expires: LeaseDuration after this replica
// first saw its last renewal, with no change since. It is only an
// accelerator: when the watch fails (no RBAC permission to watch Leases,
// say), the elector's polling still takes the Lease over; the failure is
// logged once.
func (r *Runner) watchLease(ctx context.Context, lock *observedLock, wake func()) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", r.cfg.Name).String()}
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	logged := false
	for ctx.Err() == nil {
		w, err := r.cfg.Client.Leases(r.cfg.Namespace).Watch(ctx, opts)
		if err == nil {
			r.follow(ctx, w, lock, expiry, wake)
		} else if !logged && ctx.Err() == nil {
			logged = true
			r.log.Info("cannot watch the lease, a release or an expiry is seen at the next retry", log.KeyErr, err)
		}
		select { // a closed or refused watch: try again later
		case <-ctx.Done():
		case <-expiry.C:
			wake()
		case <-time.After(r.cfg.RetryPeriod):
		}
	}
}

// follow handles w's events (see watchLease) until w ends or ctx is done;
// it stops w.
func (r *Runner) follow(ctx context.Context, w watch.Interface, lock *observedLock, expiry *time.Timer, wake func()) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry.C:
			wake()
		case ev, open := <-w.ResultChan():
			if !open {
				return
			}
			if ev.Type == watch.Deleted {
				expiry.Stop()
				wake()
				continue
			}
			lease, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			rec := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
			raw, err := json.Marshal(*rec)
			if err != nil {
				continue
			}
			// The first sight counts, whether it was the elector's Get or
			// this watch: the expiry is from then.
			first := lock.see(raw, time.Now())
			switch {
			case rec.HolderIdentity == "":
				expiry.Stop()
				wake()
			case rec.HolderIdentity == lock.Identity():
				expiry.Stop()
			default:
				expiry.Reset(time.Until(first.Add(leaseDuration(rec, r.cfg.LeaseDuration))))
			}
		}
	}
}

// leaseDuration is rec's LeaseDuration, or def if it has none.
func leaseDuration(rec *resourcelock.LeaderElectionRecord, def time.Duration) time.Duration {
	if rec.LeaseDurationSeconds > 0 {
		return time.Duration(rec.LeaseDurationSeconds) * time.Second
	}
	return def
}

type noopRecorder struct{}

func (noopRecorder) SetLeader(string, bool) {}
