package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/logkey"
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
// anything else that works until its context is done. The Runner also
// uses the methods of a *controller.Controller that a Runnable has:
//
//   - ShutdownTimeout() time.Duration: New checks it against the Lease
//     timings;
//   - RunWarm(ctx, leading <-chan struct{}) error: a warm standby runs it
//     while standing by, to fill and keep the cache, and closes leading
//     when this replica leads (Config.DisableWarmStandby);
//   - SetValidUntil(time.Time): told until when this replica leads unless
//     it renews the Lease;
//   - HasSynced() bool and SyncError() error: Ready asks them.
type Runnable interface {
	Run(ctx context.Context) error
}

// warmer is a Runnable that can get ready while this replica stands by: a
// *controller.Controller, whose RunWarm fills and keeps its cache but
// handles nothing until leading is closed.
type warmer interface {
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

	// LeaseDuration is how long a standby waits, after it saw the holder's
	// last renewal, before taking the Lease over; the Lease states it in
	// whole seconds, rounded up. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader leads after the start of its
	// last successful renewal; it renews every RetryPeriod. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between acquisition or renewal attempts.
	// Default 2s.
	RetryPeriod time.Duration
	// DisableWarmStandby starts the runnables only once this replica leads.
	// By default a standby is warm: the runnables that can (those with a
	// RunWarm method, such as a *controller.Controller) fill and keep their
	// caches while it stands by, and start handling the moment it leads, so a takeover waits for
	// no list. The price is memory: a standby holds the same caches as the
	// leader, and keeps a watch open on the API server for each.
	DisableWarmStandby bool

	// Logger receives the runner's logs. Default log.Noop.
	Logger log.Logger
	// Recorder receives the leader status. Default: none.
	Recorder Recorder

	// keepLease keeps the Lease held after a clean shutdown, as a crashed
	// leader does, so that a standby waits LeaseDuration before taking
	// over. Only this package's tests set it (export_test.go).
	keepLease bool
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

// renewMargin is how many retry periods RenewDeadline must exceed, so that
// one slow renewal does not end leading; the same as client-go's elector
// required, so that a Config valid with the previous version stays valid.
const renewMargin = 1.2

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
	case c.RenewDeadline <= time.Duration(renewMargin*float64(c.RetryPeriod)):
		return fmt.Errorf("%w: renew deadline %s must be above %.1f x retry period %s", ErrInvalidConfig, c.RenewDeadline, renewMargin, c.RetryPeriod)
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
	// clock times the Lease protocol; tests replace it.
	clock clock.WithTickerAndDelayedExecution
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
		logger = logger.With(logkey.Lease, cfg.Namespace+"/"+cfg.Name, logkey.Identity, cfg.Identity)
	}
	return &Runner{cfg: cfg, runnables: runnables, log: logger, clock: clock.RealClock{}}, nil
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

// warmStandby reports whether this replica keeps warm runnables running
// while it stands by: leader election is on, Config.DisableWarmStandby is
// not set, and at least one runnable is a warmer.
func (r *Runner) warmStandby() bool {
	if r.cfg.Disabled || r.cfg.DisableWarmStandby {
		return false
	}
	for _, run := range r.runnables {
		if _, ok := run.(warmer); ok {
			return true
		}
	}
	return false
}

// Ready reports this replica's state for /readyz (kooper/health's
// Config.Ready). A cold standby (Config.DisableWarmStandby) is ready at
// once, because it can take over, so that a Deployment of two replicas
// becomes Available with one of them waiting. Otherwise the replica is
// ready once every runnable that has a HasSynced() bool method (a
// *controller.Controller) has synced: a leader once its caches are filled,
// a warm standby once it filled those of its warm runnables, and likewise
// a runner with Config.Disabled. The status says which: "leading",
// "standby", or "synced" when Config.Disabled.
//
// When not ready, the error says so ("leading, caches not synced yet",
// "standby, caches not synced yet", or "caches not synced yet" when
// Config.Disabled), followed by why for each runnable that knows (its
// SyncError() error, such as a controller's "tenants: could not decode the
// retrieved objects of *v1alpha1.Tenant: ..."): that is the body of
// /readyz's 503. Safe for concurrent use.
func (r *Runner) Ready() (string, error) {
	standby := r.Standby()
	warm := standby && r.warmStandby()
	if standby && !warm {
		return "standby", nil // ready to take over
	}
	synced := true
	var why []error
	for _, run := range r.runnables {
		if _, ok := run.(warmer); warm && !ok {
			continue // starts only once this replica leads
		}
		s, ok := run.(interface{ HasSynced() bool })
		if !ok || s.HasSynced() {
			continue
		}
		synced = false
		if e, ok := run.(interface{ SyncError() error }); ok {
			if err := e.SyncError(); err != nil {
				why = append(why, err)
			}
		}
	}
	status := "synced"
	switch {
	case warm:
		status = "standby" // takes over without a list once synced
	case r.Leading():
		status = "leading"
	}
	if synced {
		return status, nil
	}
	msg := "caches not synced yet"
	if status != "synced" {
		msg = status + ", " + msg
	}
	if len(why) == 0 {
		return "", errors.New(msg)
	}
	return "", fmt.Errorf("%s: %w", msg, errors.Join(why...))
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

// renewed is told that this replica leads until until (the start of its
// last successful write of the Lease plus RenewDeadline, see lease.go)
// unless it renews again. Its runnables that can (a *controller.Controller)
// stop taking keys then, and cancel their handlings, by themselves: a
// replica paused past it (SIGSTOP, a frozen VM) handles nothing when it
// wakes up, before anything else runs.
func (r *Runner) renewed(until time.Time) {
	for _, rn := range r.runnables {
		if v, ok := rn.(interface{ SetValidUntil(time.Time) }); ok {
			v.SetValidUntil(until)
		}
	}
}

// elect competes for the Lease (lease.go) and runs the runnables while
// holding it.
func (r *Runner) elect(ctx context.Context) error {
	e := newElector(r.cfg, r.clock, r.log)
	r.lead(false)
	var bg sync.WaitGroup
	defer bg.Wait()
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	bg.Go(func() { e.watch(watchCtx) })

	// A warm standby starts its warm runnables now; if one returns while
	// standing by, this replica stops competing.
	var warm *warmup
	acquireCtx, stopAcquiring := context.WithCancel(ctx)
	defer stopAcquiring()
	if r.warmStandby() {
		warm = r.warmUp(ctx)
		bg.Go(func() {
			select {
			case <-warm.done:
				stopAcquiring()
			case <-acquireCtx.Done():
			}
		})
	}
	lease, start, acquired := e.acquire(acquireCtx)
	stopAcquiring()
	if acquired {
		return r.leadHolding(ctx, e, lease, start, warm)
	}
	if warm != nil {
		<-warm.done // they see ctx too, or one returned
	}
	if ctx.Err() != nil {
		return r.finish(nil, nil)
	}
	err := warm.err
	if err == nil {
		err = errors.New("a runnable returned while standing by")
	}
	r.log.Error("stopped standing by", logkey.Err, err)
	return err
}

// leadHolding runs the runnables while this replica holds the Lease l,
// written with a request that started at start, then releases it unless
// it was lost (or the tests keep it: Config.keepLease).
func (r *Runner) leadHolding(ctx context.Context, e *elector, l *coordinationv1.Lease, start time.Time, warm *warmup) error {
	// lost is cancelled, with the reason, when the protocol ends leading.
	lost, lose := context.WithCancelCause(context.WithoutCancel(ctx))
	defer lose(nil)
	// The renewals go on while the runnables drain after ctx is done, so
	// that no standby takes over before they returned.
	holding, stopHolding := context.WithCancel(lost)
	defer stopHolding()
	leading, stopLeading := context.WithCancel(ctx)
	defer stopLeading()
	defer context.AfterFunc(lost, stopLeading)()

	until := start.Add(r.cfg.RenewDeadline)
	r.renewed(until)
	held := make(chan *coordinationv1.Lease, 1)
	go func() { held <- e.hold(holding, l, until, lose, r.renewed) }()
	r.log.Info("leading")
	r.lead(true)
	err := r.runLeading(leading, warm)
	r.lead(false)
	stopHolding()
	l = <-held

	if context.Cause(lost) == nil && !r.cfg.keepLease {
		// Bounded like a renewal, on a context of its own: ctx may be done.
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		timeout := r.clock.AfterFunc(r.cfg.RenewDeadline, cancel)
		if err := e.release(rctx, l); err != nil {
			r.log.Warn("could not release the lease, a standby takes over once it expires", logkey.Err, err)
		}
		timeout.Stop()
		cancel()
	}
	if ctx.Err() != nil {
		return r.finish(err, nil) // a clean shutdown, even if the Lease ran out while draining
	}
	return r.finish(err, context.Cause(lost))
}

// warmup is the warm runnables of a warm standby, started before leading.
type warmup struct {
	cancel  context.CancelFunc
	leading chan struct{} // closed when this replica leads
	done    chan struct{} // closed once every warm runnable returned
	err     error         // the first error of a warm runnable, once done
	cold    []Runnable    // the runnables that are not warmers
}

// warmUp starts every warmer's RunWarm on a context of its own (from ctx);
// the first to return stops the others.
func (r *Runner) warmUp(ctx context.Context) *warmup {
	wctx, cancel := context.WithCancel(ctx)
	w := &warmup{cancel: cancel, leading: make(chan struct{}), done: make(chan struct{})}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for _, run := range r.runnables {
		warm, ok := run.(warmer)
		if !ok {
			w.cold = append(w.cold, run)
			continue
		}
		wg.Go(func() {
			err := warm.RunWarm(wctx, w.leading)
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

// finish logs how Run ended and returns its error: err is the runnables',
// lost why the protocol ended leading (nil if it did not).
func (r *Runner) finish(err, lost error) error {
	switch {
	case lost != nil:
		r.log.Error("lost the lease, stopped handling", logkey.Err, errors.Join(lost, err))
		if err != nil {
			return fmt.Errorf("%w: %w", ErrLeaseLost, err)
		}
		return ErrLeaseLost
	case err != nil:
		r.log.Error("stopped leading", logkey.Err, err)
		return err
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

type noopRecorder struct{}

func (noopRecorder) SetLeader(string, bool) {}
