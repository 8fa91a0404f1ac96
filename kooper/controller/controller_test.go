package controller_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
	"github.com/kooperkit/kooper/kooper/internal/handling"
)

func TestEveryListedObjectIsHandledExactlyOnce(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := fakeapi.NewRetriever(&corev1.Pod{}, m.opts)
			var want []string
			for i := range 50 {
				stored := mustAdd(t, src, pod(fmt.Sprintf("p%02d", i)))
				want = append(want, stored.(*corev1.Pod).Name+"@"+stored.(*corev1.Pod).ResourceVersion)
			}
			h := &recorder{}
			stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1})
			eventually(t, "50 objects are handled", func() bool { return len(h.Calls()) >= 50 })
			settle()
			got := h.Calls()
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("got calls %v, want each listed object once: %v", got, want)
			}
			if err := stop(); err != nil {
				t.Errorf("got Run error %v, want nil", err)
			}
		})
	}
}

func TestAnUpdateIsHandledWithTheLatestState(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := fakeapi.NewRetriever(&corev1.Pod{}, m.opts)
			mustAdd(t, src, pod("a"))
			h := &recorder{}
			stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1})
			eventually(t, "a is handled", func() bool { return h.countOf("a") == 1 })

			p := pod("a")
			p.Labels = map[string]string{"v": "2"}
			stored := mustUpdate(t, src, p).(*corev1.Pod)
			eventually(t, "the update is handled", func() bool { return h.countOf("a") == 2 })
			if got, want := h.Calls()[1], "a@"+stored.ResourceVersion; got != want {
				t.Errorf("got second call %s, want %s", got, want)
			}
			_ = stop()
		})
	}
}

func TestTheHandlerGetsItsOwnCopy(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	var mu sync.Mutex
	var seen []string
	h := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		p := obj.(*corev1.Pod)
		mu.Lock()
		seen = append(seen, p.Labels["mutated"])
		mu.Unlock()
		p.Labels = map[string]string{"mutated": "yes"} // must not reach the cache
		return controller.RequeueAfter(0)
	})
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1})
	eventually(t, "a is handled three times", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= 3 })
	_ = stop()
	for i, v := range seen {
		if v != "" {
			t.Fatalf("handling %d saw label %q written by an earlier handling: the cache was mutated", i, v)
		}
	}
}

func TestAnAlwaysFailingObjectIsHandledOnePlusMaxRetriesTimes(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		want       int
	}{
		{"three retries", 3, 4},
		{"the default, 5", 0, 1 + 5},
		{"retries disabled", -1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
			mustAdd(t, src, pod("bad"))
			mustAdd(t, src, pod("good"))
			rec := newMetrics()
			h := &recorder{answer: func(p *corev1.Pod, _ int) error {
				if p.Name == "bad" {
					return errors.New("always fails")
				}
				return nil
			}}
			stop := start(t, controller.Config{
				Name: "test", Handler: h, Retriever: src, ResyncInterval: -1,
				MaxRetries:     tt.maxRetries,
				RetryBaseDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond,
				MetricsRecorder: rec,
			})
			eventually(t, "bad is dropped", func() bool { return rec.get("dropped max_retries") == 1 })
			settle()
			if got := h.countOf("bad"); got != tt.want {
				t.Errorf("got %d calls for the failing object, want %d", got, tt.want)
			}
			if got := h.countOf("good"); got != 1 {
				t.Errorf("got %d calls for the other object, want 1", got)
			}
			if got, want := rec.get("retry"), tt.want-1; got != want {
				t.Errorf("got %d retries recorded, want %d", got, want)
			}
			_ = stop()
		})
	}
}

func TestASuccessResetsTheRetryBudget(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	rec := newMetrics()
	// Calls 1-2 fail, 3 succeeds; after the update every call fails.
	h := &recorder{answer: func(p *corev1.Pod, n int) error {
		if n == 3 {
			return nil
		}
		return errors.New("fails")
	}}
	stop := start(t, controller.Config{
		Name: "test", Handler: h, Retriever: src, ResyncInterval: -1, MaxRetries: 3,
		RetryBaseDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond, MetricsRecorder: rec,
	})
	eventually(t, "a succeeds on its third call", func() bool { return rec.get("handled success=true") == 1 })
	p := pod("a")
	p.Labels = map[string]string{"v": "2"}
	mustUpdate(t, src, p)
	eventually(t, "a is dropped", func() bool { return rec.get("dropped max_retries") == 1 })
	settle()
	// 3 calls before the success, then a full 1 + MaxRetries = 4.
	if got, want := h.countOf("a"), 3+4; got != want {
		t.Errorf("got %d calls, want %d: a success must reset the retry budget", got, want)
	}
	_ = stop()
}

func TestATerminalErrorIsNeverRetried(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	rec := newMetrics()
	h := &recorder{answer: func(*corev1.Pod, int) error {
		return fmt.Errorf("spec is invalid: %w", controller.Terminal(errors.New("percent is 0")))
	}}
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1,
		RetryBaseDelay: time.Millisecond, MetricsRecorder: rec})
	eventually(t, "a is dropped", func() bool { return rec.get("dropped terminal") == 1 })
	settle()
	if got := h.countOf("a"); got != 1 {
		t.Errorf("got %d calls, want 1", got)
	}
	_ = stop()
}

func TestRequeueAfterHandlesAgainAfterTheDelayOnly(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := clocktesting.NewFakeClock(time.Now())
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	rec := newMetrics()
	const d = 10 * time.Second
	h := &recorder{answer: func(_ *corev1.Pod, n int) error {
		if n == 1 {
			return controller.RequeueAfter(d)
		}
		return nil
	}}
	stop := start(t, controller.WithClock(controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1,
		MetricsRecorder: rec}, clock))
	// The requeue is recorded just before it is queued with the fake
	// clock's current time, so stepping from here on is exact.
	eventually(t, "the requeue is asked for", func() bool { return rec.get("queued "+"requeue") == 1 })

	clock.Step(d - time.Millisecond)
	settle()
	if got := h.countOf("a"); got != 1 {
		t.Fatalf("got %d calls %s after the requeue request, want 1 (none before %s)", got, d-time.Millisecond, d)
	}
	clock.Step(time.Millisecond)
	eventually(t, "a is handled again", func() bool { return h.countOf("a") == 2 })
	clock.Step(d)
	settle()
	if got := h.countOf("a"); got != 2 {
		t.Errorf("got %d calls, want exactly 2", got)
	}
	if got := rec.get("handled success=false"); got != 0 {
		t.Errorf("got %d failed handlings recorded, want 0: a requeue is not a failure", got)
	}
	_ = stop()
}

func TestTheProcessingTimeoutCancelsTheHandlerContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	errs := make(chan error, 1)
	h := controller.HandlerFunc(func(ctx context.Context, _ runtime.Object) error {
		select {
		case <-ctx.Done():
			errs <- ctx.Err()
		case <-time.After(5 * time.Second):
			errs <- errors.New("context not cancelled within 5s")
		}
		return controller.Terminal(errors.New("stop"))
	})
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1,
		ProcessingTimeout: 50 * time.Millisecond})
	if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got handler context error %v, want %v", err, context.DeadlineExceeded)
	}
	_ = stop()
}

func TestAPanicIsRecoveredCountedAndRetried(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	rec := newMetrics()
	h := &recorder{answer: func(_ *corev1.Pod, n int) error {
		if n == 1 {
			panic("boom")
		}
		return nil
	}}
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1,
		RetryBaseDelay: time.Millisecond, MetricsRecorder: rec})
	eventually(t, "a is handled after the panic", func() bool { return h.countOf("a") == 2 })
	if got := rec.get("panic"); got != 1 {
		t.Errorf("got %d panics recorded, want 1", got)
	}
	if got := rec.get("handled success=false"); got != 1 {
		t.Errorf("got %d failed handlings, want 1", got)
	}
	if err := stop(); err != nil {
		t.Errorf("got Run error %v, want nil", err)
	}
}

func TestAKeyIsNeverHandledConcurrentlyWhileKeysRunInParallel(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	const keys = 4
	for i := range keys {
		mustAdd(t, src, pod(fmt.Sprintf("k%d", i)))
	}
	var (
		mu           sync.Mutex
		inFlight     = map[string]int{}
		overlaps     int
		running, max int
		calls        atomic.Int64
	)
	h := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		name := obj.(*corev1.Pod).Name
		mu.Lock()
		inFlight[name]++
		if inFlight[name] > 1 {
			overlaps++
		}
		running++
		max = maxInt(max, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight[name]--
		running--
		mu.Unlock()
		calls.Add(1)
		return nil
	})
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1,
		ConcurrentWorkers: 8})
	// Re-enqueue every key many times while it is being handled.
	for round := range 30 {
		for i := range keys {
			p := pod(fmt.Sprintf("k%d", i))
			p.Labels = map[string]string{"round": fmt.Sprint(round)}
			mustUpdate(t, src, p)
		}
		time.Sleep(5 * time.Millisecond)
	}
	eventually(t, "updates are handled", func() bool { return calls.Load() >= 2*keys })
	_ = stop()
	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 {
		t.Errorf("got %d handlings overlapping another of the same key, want 0", overlaps)
	}
	if max < 2 {
		t.Errorf("got at most %d handlings at once, want different keys handled in parallel", max)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func TestRunWaitsForRunningHandlersAndCancelsThem(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	started := make(chan struct{})
	var finished atomic.Bool
	h := controller.HandlerFunc(func(ctx context.Context, _ runtime.Object) error {
		close(started)
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // clean-up after cancellation
		finished.Store(true)
		return ctx.Err()
	})
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1})
	<-started
	if err := stop(); err != nil {
		t.Errorf("got Run error %v, want nil", err)
	}
	if !finished.Load() {
		t.Error("Run returned before the running handler finished")
	}
}

// blockIgnoringContext blocks until release is closed, whatever its
// context says: a handler that ignores cancellation. goleak finds its
// goroutine by this name.
func blockIgnoringContext(release <-chan struct{}) { <-release }

// armCounter is a fake clock that counts the timers and tickers armed on
// it. (The fake's own Waiters cannot tell: its tickers never stop.)
type armCounter struct {
	*clocktesting.FakeClock
	armed atomic.Int32
}

func (c *armCounter) After(d time.Duration) <-chan time.Time {
	c.armed.Add(1)
	return c.FakeClock.After(d)
}

func (c *armCounter) NewTimer(d time.Duration) clock.Timer {
	c.armed.Add(1)
	return c.FakeClock.NewTimer(d)
}

func (c *armCounter) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.armed.Add(1)
	return c.FakeClock.AfterFunc(d, f)
}

func (c *armCounter) NewTicker(d time.Duration) clock.Ticker {
	c.armed.Add(1)
	return c.FakeClock.NewTicker(d)
}

const blockIgnoringContextName = "github.com/kooperkit/kooper/kooper/controller_test.blockIgnoringContext"

// Run gives up on a handler that ignores its cancelled context after
// ShutdownTimeout on the clock, and returns ErrShutdownTimeout: of all it
// started, only the goroutine running that handler is left, and it ends
// when the handler returns. Nothing scheduled just before the shutdown (a
// RequeueAfter, a retry, the end of SetValidUntil's right) fires, and no
// timer is armed, after Run returned.
func TestNothingOfRunIsLeftButAHandlerIgnoringCancellation(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := &armCounter{FakeClock: clocktesting.NewFakeClock(time.Now())}
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	for _, name := range []string{"requeued", "failing", "stuck"} {
		mustAdd(t, src, pod(name))
	}
	release := make(chan struct{})
	var calls sync.Map // name → *atomic.Int32
	handled := make(chan string, 10)
	h := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		name := obj.(*corev1.Pod).Name
		n, _ := calls.LoadOrStore(name, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		handled <- name
		switch name {
		case "requeued":
			return controller.RequeueAfter(time.Minute)
		case "stuck":
			blockIgnoringContext(release)
		}
		return errors.New("failed") // retried after RetryBaseDelay
	})
	c, err := controller.New(controller.WithClock(controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1,
		ShutdownTimeout: time.Second, RetryBaseDelay: 30 * time.Second, RetryMaxDelay: time.Minute}, clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	for range 3 {
		<-handled
	}
	c.SetValidUntil(clk.Now().Add(time.Hour))

	// Stop: the stuck handler keeps Run waiting until ShutdownTimeout has
	// passed on the clock.
	cancel()
	var runErr error
	for stepped := false; !stepped; {
		select {
		case runErr = <-done:
			stepped = true
		default:
			clk.Step(100 * time.Millisecond) // never reaches a retry's 30s
			goruntime.Gosched()
		}
	}
	if !errors.Is(runErr, controller.ErrShutdownTimeout) {
		t.Fatalf("got Run error %v, want %v", runErr, controller.ErrShutdownTimeout)
	}
	goleak.VerifyNone(t, goleak.IgnoreAnyFunction(blockIgnoringContextName))

	// After Run: the right moved, the stuck handler returns an error (a
	// retry), and every delay scheduled before passes. Nothing runs, and
	// no timer is armed.
	clk.armed.Store(0)
	c.SetValidUntil(clk.Now().Add(time.Hour))
	close(release)
	goleak.VerifyNone(t)
	clk.Step(2 * time.Hour)
	goleak.VerifyNone(t)
	if n := clk.armed.Load(); n != 0 {
		t.Errorf("%d timers armed after Run returned, want none", n)
	}
	calls.Range(func(name, n any) bool {
		if got := n.(*atomic.Int32).Load(); got != 1 {
			t.Errorf("%s handled %d times, want once: nothing is handled after Run returned", name, got)
		}
		return true
	})
}

func TestRunTwiceIsAnError(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	c, err := controller.New(controller.Config{Name: "test", Handler: &recorder{}, Retriever: src})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatalf("got first Run error %v, want nil", err)
	}
	if err := c.Run(ctx); !errors.Is(err, controller.ErrAlreadyRun) {
		t.Errorf("got second Run error %v, want %v", err, controller.ErrAlreadyRun)
	}
}

func TestResyncHandlesUnchangedObjectsAgain(t *testing.T) {
	tests := []struct {
		name    string
		resync  time.Duration
		atLeast int
		atMost  int
	}{
		{"resync every second", time.Second, 2, 1 << 30},
		{"resync disabled", -1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
			mustAdd(t, src, pod("a"))
			h := &recorder{}
			// client-go's shortest resync period is one second.
			stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src,
				ResyncInterval: tt.resync})
			time.Sleep(2500 * time.Millisecond)
			_ = stop()
			if got := h.countOf("a"); got < tt.atLeast || got > tt.atMost {
				t.Errorf("got %d calls in 2.5s, want between %d and %d", got, tt.atLeast, tt.atMost)
			}
		})
	}
}

func TestManagedFieldsAreDroppedBeforeTheCache(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	p := pod("a")
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}, {Manager: "other"}}
	mustAdd(t, src, p)
	got := make(chan int, 1)
	h := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		got <- len(obj.(*corev1.Pod).ManagedFields)
		return nil
	})
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1})
	n := <-got
	_ = stop()
	if n != 0 {
		t.Errorf("handler saw %d managedFields entries, want 0", n)
	}
}

func TestNewRejectsAnInvalidConfig(t *testing.T) {
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	h := &recorder{}
	tests := []struct {
		name string
		cfg  controller.Config
		want string
	}{
		{"no name", controller.Config{Handler: h, Retriever: src}, "name is required"},
		{"no handler", controller.Config{Name: "x", Retriever: src}, "handler is required"},
		{"no retriever", controller.Config{Name: "x", Handler: h}, "retriever is required"},
		{"max delay below base", controller.Config{Name: "x", Handler: h, Retriever: src,
			RetryBaseDelay: time.Second, RetryMaxDelay: time.Millisecond}, "retry max delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := controller.New(tt.cfg)
			if !errors.Is(err, controller.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one wrapping ErrInvalidConfig and saying %q", err, tt.want)
			}
		})
	}
}

func TestNewDoesNotChangeTheCallersConfig(t *testing.T) {
	cfg := controller.Config{Name: "x", Handler: &recorder{}, Retriever: fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})}
	if _, err := controller.New(cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ConcurrentWorkers != 0 || cfg.Logger != nil {
		t.Errorf("got a Config changed by New: %+v", cfg)
	}
}

func TestRequeueDelayReadsAWrappedRequest(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		want   time.Duration
		wantOK bool
	}{
		{"a request", controller.RequeueAfter(time.Second), time.Second, true},
		{"a wrapped request", fmt.Errorf("later: %w", controller.RequeueAfter(time.Minute)), time.Minute, true},
		{"another error", errors.New("boom"), 0, false},
		{"no error", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := controller.RequeueDelay(tt.err)
			if d != tt.want || ok != tt.wantOK {
				t.Errorf("got %s %t, want %s %t", d, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// gated holds a Retriever's List and Watch until open is closed.
type gated struct {
	controller.Retriever
	open chan struct{}
}

func (g gated) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	<-g.open
	return g.Retriever.List(ctx, opts)
}

func (g gated) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	<-g.open
	return g.Retriever.Watch(ctx, opts)
}

func TestHasSyncedTurnsTrueOnceTheCacheIsFilled(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	g := gated{Retriever: src, open: make(chan struct{})}
	c, err := controller.New(controller.Config{Name: "test", Handler: &recorder{}, Retriever: g, ResyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	settle()
	if c.HasSynced() {
		t.Error("HasSynced is true while the retriever has not answered, want false")
	}
	close(g.open)
	eventually(t, "HasSynced", c.HasSynced)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("got Run error %v, want nil", err)
	}
	if !c.HasSynced() {
		t.Error("HasSynced turned false after Run returned, want true")
	}
}

func TestListReturnsTheCacheOnlyWhileRunningAndSynced(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	mustAdd(t, src, pod("b"))
	g := gated{Retriever: src, open: make(chan struct{})}
	c, err := controller.New(controller.Config{
		Name: "test", Handler: &recorder{}, Retriever: g, ResyncInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if objs, ok := c.List(); ok || objs != nil {
		t.Errorf("List before Run = %v, %v; want nil, false", objs, ok)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	settle()
	if _, ok := c.List(); ok {
		t.Error("List is ok while the retriever has not answered, want false")
	}
	close(g.open)
	eventually(t, "HasSynced", c.HasSynced)
	mustAdd(t, src, pod("c"))
	eventually(t, "three cached pods", func() bool { objs, _ := c.List(); return len(objs) == 3 })
	objs, ok := c.List()
	if !ok {
		t.Fatal("List after sync is not ok")
	}
	var names []string
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.ManagedFields != nil {
			t.Errorf("cached pod %s has managedFields %v, want them dropped", p.Name, p.ManagedFields)
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"a", "b", "c"}; !slices.Equal(names, want) {
		t.Errorf("List names = %v, want %v", names, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("got Run error %v, want nil", err)
	}
	if objs, ok := c.List(); ok || objs != nil {
		t.Errorf("List after Run returned = %d objects, %v; want nil, false", len(objs), ok)
	}
}

// A deleted object is not handled: there is no delete event.
func TestADeletionIsNotHandled(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	stored := mustAdd(t, src, pod("a"))
	h := &recorder{}
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: src, ResyncInterval: -1})
	eventually(t, "the pod is handled", func() bool { return len(h.Calls()) == 1 })
	if err := src.Delete(stored); err != nil {
		t.Fatal(err)
	}
	settle()
	if got := h.Calls(); len(got) != 1 {
		t.Errorf("got calls %v, want only the live one", got)
	}
	_ = stop()
}

func TestTheHandlerContextDescribesTheHandling(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	var (
		mu  sync.Mutex
		got []handling.Info
	)
	h := controller.HandlerFunc(func(ctx context.Context, _ runtime.Object) error {
		info, ok := handling.From(ctx)
		if !ok {
			return controller.Terminal(errors.New("no handling in the context"))
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, info)
		if len(got) < 3 {
			return errors.New("fail twice")
		}
		return nil
	})
	stop := start(t, controller.Config{Name: "describer", Handler: h, Retriever: src, ResyncInterval: -1, RetryBaseDelay: time.Millisecond})
	eventually(t, "three attempts", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 })
	_ = stop()
	// Listed, then retried twice after the error.
	wantReasons := [][]string{{"initial"}, {"retry (fail twice)"}, {"retry (fail twice)"}}
	for i, info := range got {
		if info.Controller != "describer" || info.Key != "ns/a" || info.Attempt != i+1 {
			t.Errorf("call %d: got %+v, want controller describer, key ns/a, attempt %d", i, info, i+1)
		}
		if r := info.Reasons.Strings(); !slices.Equal(r, wantReasons[i]) {
			t.Errorf("call %d: got reasons %q, want %q", i, r, wantReasons[i])
		}
	}
	if _, ok := handling.From(context.Background()); ok {
		t.Error("got a Handling from a plain context")
	}
}
