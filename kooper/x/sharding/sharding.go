package sharding

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/deadline"
	"github.com/kooperkit/kooper/kooper/internal/logkey"
	"github.com/kooperkit/kooper/kooper/log"
)

// Names on the Leases of a sharded controller.
const (
	// LabelGroup marks every Lease of one sharded controller's replicas;
	// its value is Config.Name.
	LabelGroup = "sharding.kooperkit.io/group"
	// AnnotationSlots holds the slots a replica claims: it may be handling
	// them, so no other replica may (e.g. "0-3,7").
	AnnotationSlots = "sharding.kooperkit.io/slots"
	// AnnotationSlotCount holds the number of slots; replicas of one group
	// must agree on it.
	AnnotationSlotCount = "sharding.kooperkit.io/slot-count"
)

// Defaults of Config.
const (
	DefaultSlots         = 32
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Mode says how a replica retrieves its share.
type Mode string

// The modes.
const (
	// ModeAuto detects the mode at start (the default).
	ModeAuto Mode = ""
	// ModeServerSide retrieves the owned slots with a shard selector: the
	// API server sends only the share (feature gate ShardedListAndWatch).
	ModeServerSide Mode = "server-side"
	// ModeClientSide retrieves every object and handles only the share.
	ModeClientSide Mode = "client-side"
)

// ErrInvalidConfig is wrapped by every error New returns for a bad Config,
// and by those Run returns for controllers it cannot shard.
var ErrInvalidConfig = errors.New("invalid sharding config")

// Config configures a Runner.
type Config struct {
	// Name names the group of replicas: the prefix of their Leases' names
	// and the value of their LabelGroup label. At most 52 characters.
	// Required.
	Name string
	// Namespace holds the Leases, usually the operator's. Required.
	Namespace string
	// Client reads and writes the Leases (get, list, watch, create, update,
	// delete), e.g. clientset.CoordinationV1(). Required.
	Client coordinationv1client.LeasesGetter
	// Identity names this replica in its Lease's holderIdentity. Default:
	// the host name plus a random suffix.
	Identity string
	// Slots is how many slots the hash space is cut into, a power of two up
	// to 256; every replica of the group must use the same. More slots
	// share more evenly and move in smaller steps. Default DefaultSlots.
	Slots int
	// Mode is how the share is retrieved. Default ModeAuto.
	Mode Mode

	// LeaseDuration is how long the other replicas wait after this one's
	// last renewal before they take its slots. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long after its last successful renewal a
	// replica keeps handling; after it, it stops and checks its claims
	// again before it handles anything. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between renewals. Default 2s.
	RetryPeriod time.Duration

	// Clock drives the runner's waits, stamps its renewals and measures
	// the right to handle that the slot gate (Handler) enforces. Default:
	// the real clock.
	Clock clock.WithTickerAndDelayedExecution

	// Logger receives the runner's logs. Default log.Noop.
	Logger log.Logger
	// Recorder receives the mode and the number of slots owned. Default:
	// none.
	Recorder Recorder
}

// Recorder receives a sharded replica's state: the group (Config.Name),
// the mode ("server-side", "client-side", or "" until detected: a Mode as a
// string), the slots this replica owns and the group's slots.
// kooper/metrics/prometheus implements it.
type Recorder interface {
	SetShards(name, mode string, owned, total int)
}

type noopRecorder struct{}

func (noopRecorder) SetShards(string, string, int, int) {}

func (c *Config) defaults() {
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
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
		c.Identity = host + "_" + randomID(4)
	}
	if c.Logger == nil {
		c.Logger = log.Noop
	}
	if c.Recorder == nil {
		c.Recorder = noopRecorder{}
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

func (c Config) validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: name is required", ErrInvalidConfig)
	case len(c.Name) > 52 || len(validation.IsDNS1123Subdomain(c.Name+"-x")) > 0:
		return fmt.Errorf("%w: name %q must be a DNS subdomain of at most 52 characters", ErrInvalidConfig, c.Name)
	case c.Namespace == "":
		return fmt.Errorf("%w: namespace is required", ErrInvalidConfig)
	case c.Client == nil:
		return fmt.Errorf("%w: client is required", ErrInvalidConfig)
	case !validSlotCount(c.Slots):
		return fmt.Errorf("%w: %d slots, want a power of two from 1 to %d", ErrInvalidConfig, c.Slots, maxSlots)
	case c.Mode != ModeAuto && c.Mode != ModeServerSide && c.Mode != ModeClientSide:
		return fmt.Errorf("%w: unknown mode %q", ErrInvalidConfig, c.Mode)
	case c.RenewDeadline >= c.LeaseDuration:
		return fmt.Errorf("%w: renew deadline %s must be below lease duration %s", ErrInvalidConfig, c.RenewDeadline, c.LeaseDuration)
	case c.RetryPeriod >= c.RenewDeadline:
		return fmt.Errorf("%w: retry period %s must be below renew deadline %s", ErrInvalidConfig, c.RetryPeriod, c.RenewDeadline)
	}
	return nil
}

// wired checks the controllers Run is given: at least one, as many as
// the Handlers and the Retrievers r made (a controller without the gate
// would handle every object), and each stopping its handlings before
// another replica may take its slots.
func (r *Runner) wired(sharded []*controller.Controller) error {
	r.wiring.Lock()
	handlers, retrievers := r.handlers, len(r.retrievers)
	r.wiring.Unlock()
	switch {
	case len(sharded) == 0:
		return fmt.Errorf("%w: no controller to shard", ErrInvalidConfig)
	case slices.Contains(sharded, nil):
		return fmt.Errorf("%w: a controller is nil", ErrInvalidConfig)
	case handlers != len(sharded) || retrievers != len(sharded):
		return fmt.Errorf("%w: each of the %d controllers must be built with one Runner.Handler and one Runner.Retriever; got %d handlers and %d retrievers",
			ErrInvalidConfig, len(sharded), handlers, retrievers)
	}
	budget := r.cfg.LeaseDuration - r.cfg.RenewDeadline
	for _, ctrl := range sharded {
		if ctrl.ShutdownTimeout() >= budget {
			return fmt.Errorf("%w: a controller's shutdown timeout %s must be below lease duration - renew deadline = %s, or another replica could start a slot while this one still handles it",
				ErrInvalidConfig, ctrl.ShutdownTimeout(), budget)
		}
	}
	return nil
}

// Runner runs one replica of sharded controllers: it holds the replica's
// Lease, agrees with the other replicas' Runners on who owns which slot
// (docs/sharding.md), and has each controller handle the objects of the
// slots it owns, through the Handler and Retriever it wraps. Build one
// with New.
type Runner struct {
	cfg Config
	log log.Logger
	// gate is the slot table every Handler goes through.
	gate *gate

	// wiring guards what Handler and Retriever record.
	wiring     sync.Mutex
	handlers   int
	retrievers []*shardRetriever

	ran   atomic.Bool
	mode  atomic.Value // Mode, once detected
	owned atomic.Pointer[[]int]
	// sharded are Run's controllers.
	sharded []*controller.Controller

	// Run's state, touched by Run's loop only.
	lease     *coordinationv1.Lease // as last written or read
	claims    map[int]bool          // in the Lease's annotation
	verified  map[int]bool          // acquired by the controllers
	view      *view
	peers     *peers
	suspended atomic.Bool // set by the deadline timer
	deadline  clock.Timer
	// expiries are the deadline timer's calls of expire, each in a
	// goroutine of its own (a fake clock calls back while it holds its
	// lock, which expire's reads of the clock would wait for); Run waits
	// for them, and none starts once expiryOver is set.
	expiries   sync.WaitGroup
	expiryMu   sync.Mutex
	expiryOver bool
	// lastRenew is the start of the last successful renewal.
	lastRenew atomic.Pointer[time.Time]
	// joined is true while this replica's Lease exists.
	joined atomic.Bool
	// starved says why this replica holds no slot while it should; nil
	// while it holds one (peers.judge).
	starved atomic.Pointer[string]
}

// New returns the Runner of one replica of the group cfg.Name. Build each
// sharded controller with its Handler and Retriever, then Run them: each
// handles its share of its own objects, all with the same slots. Errors
// wrap ErrInvalidConfig.
func New(cfg Config) (*Runner, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, gate: newGate(cfg.Slots, deadline.New(cfg.Clock)),
		log: cfg.Logger.With("group", cfg.Namespace+"/"+cfg.Name, logkey.Identity, cfg.Identity)}
	r.owned.Store(new([]int))
	return r, nil
}

// Mode returns how this replica retrieves its share: ModeAuto until Run
// has detected it.
func (r *Runner) Mode() Mode {
	m, _ := r.mode.Load().(Mode)
	return m
}

// Slots returns the slots this replica handles now, sorted. Safe for
// concurrent use.
func (r *Runner) Slots() []int { return slices.Clone(*r.owned.Load()) }

// Ready reports this replica's state for /readyz (kooper/health's
// Config.Ready): an error until it has joined its group, then how it
// shards, e.g. "sharded server-side: 11 of 32 slots". A replica that owns
// no slot while joining is ready: the others own them. One that has owned
// none for RenewDeadline while it should own some (the slots are held by
// Leases that do not let go, see doc.go) is not, and the error names
// them. Safe for concurrent use.
func (r *Runner) Ready() (string, error) {
	if !r.joined.Load() {
		return "", errors.New("sharding: not in the group yet")
	}
	if why := r.starved.Load(); why != nil {
		return "", errors.New(*why)
	}
	return fmt.Sprintf("sharded %s: %d of %d slots", r.Mode(), len(*r.owned.Load()), r.cfg.Slots), nil
}

// Run runs the sharded controllers, with their plain Run, until ctx is
// done. It detects the mode (Config.Mode), creates this replica's Lease,
// renews it, takes and gives up slots as replicas come and go, and on the
// way out gives up every slot (after its handlings returned) and deletes
// the Lease, so that the others take its slots at once. It returns nil
// after a clean shutdown, or the first error of a controller or of the
// start; an error wrapping ErrInvalidConfig if the Runner did not make
// one Handler and one Retriever per controller (see New: a controller
// without the gate would handle every object) or a controller's
// ShutdownTimeout is not below LeaseDuration − RenewDeadline. Run may be
// called once.
func (r *Runner) Run(ctx context.Context, sharded ...*controller.Controller) error {
	if err := r.wired(sharded); err != nil {
		return err
	}
	if !r.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("sharding runner: %w", controller.ErrAlreadyRun)
	}
	defer r.gate.right.Stop()
	r.sharded = sharded
	mode := r.cfg.Mode
	if mode == ModeAuto {
		r.wiring.Lock()
		first := r.retrievers[0].next
		r.wiring.Unlock()
		server, err := detectServerSharding(ctx, first)
		if err != nil {
			return err
		}
		mode = ModeClientSide
		if server {
			mode = ModeServerSide
		}
	}
	r.mode.Store(mode)
	if mode == ModeServerSide {
		r.log.Info("sharding server-side: the API server sends each replica its share only", "slots", r.cfg.Slots)
	} else {
		r.log.Warn("sharding client-side: the API server cannot shard (feature gate ShardedListAndWatch off), so every replica retrieves and caches every object and handles its share only", "slots", r.cfg.Slots)
	}
	r.report()

	r.deadline = r.cfg.Clock.AfterFunc(r.cfg.RenewDeadline, r.deadlinePassed)
	defer r.stopDeadline()
	if err := r.createLease(ctx); err != nil {
		return err
	}

	// The controllers run until the slots are given up, after ctx.
	runCtx, stopRunning := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRunning()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	failed := make(chan struct{})
	var failOnce sync.Once
	runOne := func(run func(context.Context) error) {
		wg.Go(func() {
			if err := run(runCtx); err != nil && runCtx.Err() == nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				failOnce.Do(func() { close(failed) })
			}
		})
	}
	for _, c := range r.sharded {
		runOne(c.Run)
	}

	wake := make(chan struct{}, 1)
	r.view = newView(r.cfg.LeaseDuration)
	r.peers = newPeers(r.cfg.Slots, r.cfg.RenewDeadline)
	// The group as it is now, before the first step: a replica that joins
	// must not see itself alone and claim every slot nobody claims yet.
	if list, err := r.cfg.Client.Leases(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelGroup + "=" + r.cfg.Name}); err == nil {
		r.view.replace(list.Items, r.cfg.Clock.Now())
	} else {
		r.log.Warn("could not list the group's Leases; the watch will", logkey.Err, err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	wg.Go(func() { r.watchLeases(watchCtx, wake) })

	err := r.loop(ctx, wake, failed)
	stopWatch()
	r.leave()
	stopRunning()
	wg.Wait()
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}

// loop takes a step every RetryPeriod (with jitter), and at once when the
// Leases change, until ctx is done or a controller failed.
func (r *Runner) loop(ctx context.Context, wake <-chan struct{}, failed <-chan struct{}) error {
	timer := r.cfg.Clock.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-failed:
			return nil
		case <-timer.C():
		case <-wake:
		}
		if err := r.step(ctx); err != nil {
			return err
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		next := jitter(r.cfg.RetryPeriod)
		if d, ok := r.view.nextExpiry(r.cfg.Clock.Now()); ok && d < next {
			next = d // a replica that stopped renewing is gone then: rebalance at once
		}
		timer.Reset(next)
	}
}

// step renews the Lease, then gives up the slots this replica should no
// longer own and claims those it should (docs/sharding.md).
func (r *Runner) step(ctx context.Context) error {
	// Renew when due (or after a lapse), not on every wake-up: a step
	// woken by another replica's renewal must not write, or every renewal
	// would set off every other replica's.
	if last := r.lastRenew.Load(); last == nil || r.cfg.Clock.Since(*last) >= r.cfg.RetryPeriod || r.suspended.Load() || len(r.claims) > len(r.verified) {
		if !r.renew(ctx) {
			return nil // logged; tried again next step
		}
	}
	now := r.cfg.Clock.Now()
	r.cleanUp(ctx, now)
	// Which Leases count as members, and which slots any other Lease
	// claims, whatever its slot count (peers.go, doc.go).
	j := r.peers.judge(now, readLeases(r.view.others(now, r.lease.Name), r.cfg.Slots), r.lease.Name, r.claims, r.verified)
	for _, f := range j.news {
		r.log.Warn(f.msg, f.kv...)
	}
	want := j.want

	// 1. Release first: stop, drain, then remove the claim.
	released := false
	for s := range r.claims {
		if want[s] {
			continue
		}
		if r.verified[s] && len(j.claimed[s]) > 0 {
			// Another Lease claims it too: a replica does so only until its
			// next check, and while it does, the one that should own the
			// slot could not take it. Kept, whoever claims it.
			continue
		}
		if !r.release(ctx, s) {
			continue // still draining: keep the claim
		}
		delete(r.claims, s)
		released = true
	}
	if released {
		if err := r.write(ctx); err != nil {
			r.log.Warn("could not record released slots (still claimed)", logkey.Err, err)
		}
	}

	// 2. Claim what no other live Lease claims, then check with a quorum
	// read.
	added := false
	for s := range want {
		if !r.claims[s] && len(j.claimed[s]) == 0 {
			r.claims[s] = true
			added = true
		}
	}
	if added {
		if err := r.write(ctx); err != nil {
			r.log.Warn("could not claim slots", logkey.Err, err)
			return nil
		}
	}
	if len(r.claims) > len(r.verified) {
		r.verify(ctx)
	}
	r.report()
	r.setStarved(j.starved, len(r.verified) > 0)
	return nil
}

// setStarved publishes why this replica holds no slot while it should
// ("" if it does not), logging when that begins. held: it holds a slot
// after this step's checks.
func (r *Runner) setStarved(why string, held bool) {
	if why == "" || held {
		r.starved.Store(nil)
		return
	}
	if r.starved.Load() == nil {
		r.log.Warn("holding no slot while this replica should own some: not ready", "why", why)
	}
	r.starved.Store(&why)
}

// verify checks the claims not yet verified against every Lease of the
// group, read from the API server (a quorum read) after they were written:
// a slot that no other live Lease claims, whatever its slot count, is
// acquired; one that another claims is given up.
func (r *Runner) verify(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RenewDeadline/2)
	defer cancel()
	list, err := r.cfg.Client.Leases(r.cfg.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelGroup + "=" + r.cfg.Name})
	if err != nil {
		r.log.Warn("could not read the group's Leases to check claims", logkey.Err, err)
		return
	}
	now := r.cfg.Clock.Now()
	r.view.replace(list.Items, now)
	taken := claimed(readLeases(r.view.others(now, r.lease.Name), r.cfg.Slots))
	dropped := false
	var acquired []int
	for s := range r.claims {
		if r.verified[s] {
			continue
		}
		if others, ok := taken[s]; ok {
			r.log.Info("slot claimed by another Lease too: giving it up", "slot", s, "other", others[0])
			delete(r.claims, s)
			dropped = true
			continue
		}
		r.verified[s] = true
		acquired = append(acquired, s)
	}
	if len(acquired) > 0 {
		r.acquire(acquired)
		r.log.Info("slots acquired", "slots", formatSlots(acquired))
	}
	if dropped {
		if err := r.write(ctx); err != nil {
			r.log.Warn("could not give up conflicting claims (still claimed, not handled)", logkey.Err, err)
		}
	}
}

// release stops handling slot s (verified or not) and waits for its
// handlings, up to the retry period; false if they still run, and the
// claim must stay.
func (r *Runner) release(ctx context.Context, s int) bool {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RetryPeriod)
	defer cancel()
	was := r.verified[s]
	delete(r.verified, s) // no key of it is taken from now on
	if err := r.releaseSlot(cctx, s); err != nil {
		r.log.Info("slot released, its handlings still running: the claim stays until they return", "slot", s)
		return false
	}
	if was {
		r.log.Info("slot released", "slot", s)
	}
	return true
}

// renew writes the Lease (renewTime and claims) and reports whether it
// could. After a lapse (the deadline passed, the handlings were suspended)
// every claim must be verified again.
func (r *Runner) renew(ctx context.Context) bool {
	if r.suspended.Swap(false) {
		r.suspend() // again, from the loop: slots verified meanwhile too
		r.log.Warn("lease not renewed within the renew deadline: stopped handling, claims will be checked again", "deadline", r.cfg.RenewDeadline)
	}
	err := r.write(ctx)
	if apierrors.IsNotFound(err) {
		// Deleted by a replica that saw it expired: nothing is owned.
		r.suspend()
		r.claims = map[int]bool{}
		r.log.Warn("this replica's Lease was deleted: starting again with no slot")
		err = r.createLease(ctx)
	}
	if err != nil {
		r.log.Warn("could not renew the Lease", logkey.Err, err)
		if r.cfg.Clock.Since(*r.lastRenew.Load()) >= r.cfg.RenewDeadline {
			r.suspend()
		}
		return false
	}
	return true
}

// write stores the Lease with the claims and a new renewTime; on success
// the handling deadline moves to the write's start plus RenewDeadline.
func (r *Runner) write(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RenewDeadline/2)
	defer cancel()
	start := r.cfg.Clock.Now()
	l := r.lease.DeepCopy()
	l.Annotations[AnnotationSlots] = formatSlots(slices.Collect(maps.Keys(r.claims)))
	l.Spec.RenewTime = &metav1.MicroTime{Time: start}
	got, err := r.cfg.Client.Leases(r.cfg.Namespace).Update(cctx, l, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// Changed by someone else (kubectl?): take its version, keep ours.
		if cur, getErr := r.cfg.Client.Leases(r.cfg.Namespace).Get(cctx, l.Name, metav1.GetOptions{}); getErr == nil {
			l.ResourceVersion = cur.ResourceVersion
			got, err = r.cfg.Client.Leases(r.cfg.Namespace).Update(cctx, l, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return err
	}
	r.lease = got
	r.renewed(start)
	return nil
}

// renewed records a successful write that started at start.
func (r *Runner) renewed(start time.Time) {
	r.lastRenew.Store(&start)
	until := start.Add(r.cfg.RenewDeadline)
	r.gate.right.Set(until)
	r.deadline.Reset(until.Sub(r.cfg.Clock.Now()))
}

// deadlinePassed is the deadline timer's callback.
func (r *Runner) deadlinePassed() {
	r.expiryMu.Lock()
	defer r.expiryMu.Unlock()
	if !r.expiryOver {
		r.expiries.Go(r.expire)
	}
}

// stopDeadline stops the deadline timer when Run returns, and waits for an
// expire it started.
func (r *Runner) stopDeadline() {
	r.deadline.Stop()
	r.expiryMu.Lock()
	r.expiryOver = true
	r.expiryMu.Unlock()
	r.expiries.Wait()
}

// expire runs when the renew deadline passed with no renewal: the
// handlings are stopped at once, not at the next step.
func (r *Runner) expire() {
	if last := r.lastRenew.Load(); last != nil && r.cfg.Clock.Since(*last) < r.cfg.RenewDeadline {
		return // renewed meanwhile
	}
	r.suspended.Store(true)
	r.suspendSlots()
	r.owned.Store(new([]int))
}

// suspend stops every handling now (the loop's own path).
func (r *Runner) suspend() {
	r.suspendSlots()
	r.verified = map[int]bool{}
	r.report()
}

// suspendSlots releases every slot of the gate and cancels the running
// handlings, waiting for them at most LeaseDuration − RenewDeadline.
func (r *Runner) suspendSlots() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.LeaseDuration-r.cfg.RenewDeadline)
	defer cancel()
	_ = r.gate.suspend(ctx)
	r.moveWatches()
}

// acquire lets the objects of slots be handled, and has them queued:
// server-side, the retrievers' watches move to the new selector, and the
// objects it adds reach the caches as adds, which are queued; client-side,
// the key of every cached object of the slots is queued (a controller
// whose cache has not synced yet queues every object once it has, and the
// gate admits them).
func (r *Runner) acquire(slots []int) {
	r.gate.acquire(slots)
	if r.Mode() == ModeServerSide {
		r.moveWatches()
		return
	}
	in := make([]bool, r.cfg.Slots)
	for _, s := range slots {
		in[s] = true
	}
	for _, c := range r.sharded {
		objs, _ := c.List()
		for _, obj := range objs {
			m, err := meta.Accessor(obj)
			if err != nil || m.GetUID() == "" || !in[SlotOf(m.GetUID(), r.cfg.Slots)] {
				continue
			}
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				c.Enqueue(key)
			}
		}
	}
}

// releaseSlot stops handling the objects of slot and returns once none of
// its handlings runs, or with ctx's error; server-side, the retrievers'
// watches then move to the new selector, and the caches drop the slot's
// objects.
func (r *Runner) releaseSlot(ctx context.Context, slot int) error {
	err := r.gate.release(ctx, slot)
	r.moveWatches()
	return err
}

// moveWatches moves, server-side, the retrievers' open watches to the
// selector of the acquired slots (see Retriever).
func (r *Runner) moveWatches() {
	if r.Mode() != ModeServerSide {
		return
	}
	r.wiring.Lock()
	retrievers := slices.Clone(r.retrievers)
	r.wiring.Unlock()
	for _, d := range retrievers {
		d.changed()
	}
}

// createLease creates this replica's Lease, with no claims.
func (r *Runner) createLease(ctx context.Context) error {
	start := r.cfg.Clock.Now()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.cfg.Name + "-" + randomID(5),
			Namespace:   r.cfg.Namespace,
			Labels:      map[string]string{LabelGroup: r.cfg.Name},
			Annotations: map[string]string{AnnotationSlots: "", AnnotationSlotCount: strconv.Itoa(r.cfg.Slots)},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(r.cfg.Identity),
			LeaseDurationSeconds: ptr.To(int32(r.cfg.LeaseDuration / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: start},
			RenewTime:            &metav1.MicroTime{Time: start},
		},
	}
	got, err := r.cfg.Client.Leases(r.cfg.Namespace).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("could not create the Lease of this replica: %w", err)
	}
	r.lease = got
	r.claims, r.verified = map[int]bool{}, map[int]bool{}
	r.renewed(start)
	r.joined.Store(true)
	r.log.Info("joined the group", "lease", got.Name)
	return nil
}

// leave gives up every slot, waiting for its handlings, and deletes the
// Lease, so that the other replicas take the slots at once.
func (r *Runner) leave() {
	r.joined.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RenewDeadline)
	defer cancel()
	for s := range r.verified {
		if err := r.releaseSlot(ctx, s); err != nil {
			r.log.Warn("handlings still running on the way out: the Lease is left to expire", "slot", s)
			return
		}
	}
	r.verified = map[int]bool{}
	r.report()
	// No resourceVersion precondition: only this replica writes its Lease,
	// and a write cancelled with ctx may have been stored all the same.
	err := r.cfg.Client.Leases(r.cfg.Namespace).Delete(ctx, r.lease.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		r.log.Warn("could not delete the Lease: the others take its slots once it expires", logkey.Err, err)
		return
	}
	r.log.Info("left the group")
}

// cleanUp deletes the Leases of replicas gone for forgetAfter lease
// durations.
func (r *Runner) cleanUp(ctx context.Context, now time.Time) {
	for _, l := range r.view.stale(now, forgetAfter*r.cfg.LeaseDuration) {
		err := r.cfg.Client.Leases(r.cfg.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion},
		})
		if err == nil {
			r.log.Info("deleted the Lease of a replica gone for long", "lease", l.Name)
		}
	}
}

// report publishes the owned slots.
func (r *Runner) report() {
	owned := slices.Sorted(maps.Keys(r.verified))
	r.owned.Store(&owned)
	r.cfg.Recorder.SetShards(r.cfg.Name, string(r.Mode()), len(owned), r.cfg.Slots)
}

// jitter returns d plus up to 20 %.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// randomID returns n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
