package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// modes are the two ways a cache fills: a streamed initial list
// (watch-list, client-go 0.36's default) and LIST then WATCH (fakes and
// older servers). Behaviour tests run in both.
var modes = []struct {
	name string
	opts fakeapi.Options
}{
	{"watch-list", fakeapi.Options{}},
	{"list+watch", fakeapi.Options{DisableWatchList: true}},
}

// start runs a new controller for cfg in the background. stop cancels it
// and returns Run's error.
func start(t *testing.T, cfg controller.Config, sources ...controller.Source) (stop func() error) {
	t.Helper()
	c, err := controller.New(cfg, sources...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return runInBackground(t, c.Run)
}

// runInBackground calls run (a controller's Run or RunWarm) in the
// background. stop cancels its context and returns its error.
func runInBackground(t *testing.T, run func(context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return 10s after its context was cancelled")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func mustAdd(t *testing.T, r *fakeapi.Retriever, obj runtime.Object) runtime.Object {
	t.Helper()
	stored, err := r.Add(obj)
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	return stored
}

func mustUpdate(t *testing.T, r *fakeapi.Retriever, obj runtime.Object) runtime.Object {
	t.Helper()
	stored, err := r.Update(obj)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	return stored
}

// recorder is a Handler that records every call as "name@resourceVersion"
// and answers with answer(obj, n), n counting the calls for that name from 1.
type recorder struct {
	mu     sync.Mutex
	calls  []string
	counts map[string]int
	answer func(obj *corev1.Pod, n int) error
}

func (r *recorder) Handle(_ context.Context, obj runtime.Object) error {
	p := obj.(*corev1.Pod)
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.calls = append(r.calls, p.Name+"@"+p.ResourceVersion)
	r.counts[p.Name]++
	n, answer := r.counts[p.Name], r.answer
	r.mu.Unlock()
	if answer != nil {
		return answer(p, n)
	}
	return nil
}

// Calls returns every call so far, oldest first.
func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// countOf returns how many calls were for name.
func (r *recorder) countOf(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

// eventually polls cond every 5ms until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle gives the controller time to do something it must not do.
func settle() { time.Sleep(300 * time.Millisecond) }

// metrics is a MetricsRecorder that counts calls.
type metrics struct {
	mu     sync.Mutex
	counts map[string]int
}

func newMetrics() *metrics { return &metrics{counts: map[string]int{}} }

func (m *metrics) inc(k string, n int) {
	m.mu.Lock()
	m.counts[k] += n
	m.mu.Unlock()
}

func (m *metrics) get(k string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[k]
}

func (m *metrics) IncQueuedEvent(_ string, source string) { m.inc("queued "+source, 1) }
func (m *metrics) ObserveQueueWait(string, time.Duration) { m.inc("queue wait", 1) }
func (m *metrics) ObserveHandling(_ string, ok bool, _ time.Duration) {
	m.inc(fmt.Sprintf("handled success=%t", ok), 1)
}
func (m *metrics) IncRetry(string)                 { m.inc("retry", 1) }
func (m *metrics) IncDropped(_ string, why string) { m.inc("dropped "+why, 1) }
func (m *metrics) IncPanic(string)                 { m.inc("panic", 1) }
func (m *metrics) AddQueueLength(_ string, d int)  { m.inc("queue length", d) }
func (m *metrics) IncRetrieveError(_ string, kind string) {
	m.inc("retrieve error "+kind, 1)
}
func (m *metrics) ObserveCacheWait(_ string, caughtUp bool, _ time.Duration) {
	m.inc(fmt.Sprintf("cache wait caught up %t", caughtUp), 1)
}
