package event_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/event"
)

// waitForEvents polls namespace until it holds n events or a deadline
// passes: the Recorder writes asynchronously.
func waitForEvents(t *testing.T, client kubernetes.Interface, namespace string, n int) []corev1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("got error %v listing events, want nil", err)
		}
		if len(list.Items) >= n {
			return list.Items
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d events in %q after 10s, want %d", len(list.Items), namespace, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRecorder(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "pod-uid"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}}
	tests := []struct {
		name          string
		record        func(r *event.Recorder)
		wantNamespace string
		wantType      string
		wantReason    string
		wantMessage   string
		wantObject    corev1.ObjectReference
	}{
		{
			name:          "a normal event is written about a namespaced object",
			record:        func(r *event.Recorder) { r.Normal(pod, "Created", "created %s %d", "replica", 1) },
			wantNamespace: "shop",
			wantType:      corev1.EventTypeNormal,
			wantReason:    "Created",
			wantMessage:   "created replica 1",
			wantObject:    corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "pod-uid"},
		},
		{
			name:          "a warning about a cluster-scoped object is written in the default namespace",
			record:        func(r *event.Recorder) { r.Warning(node, "Unreachable", "no heartbeat") },
			wantNamespace: "default",
			wantType:      corev1.EventTypeWarning,
			wantReason:    "Unreachable",
			wantMessage:   "no heartbeat",
			wantObject:    corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "node-uid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			r, err := event.New(event.Config{Client: client, Component: "test-operator"})
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}

			tt.record(r)
			events := waitForEvents(t, client, tt.wantNamespace, 1)
			r.Shutdown(context.Background())
			goleak.VerifyNone(t)

			if len(events) != 1 {
				t.Fatalf("got %d events, want 1", len(events))
			}
			e := events[0]
			if e.Type != tt.wantType {
				t.Errorf("got type %q, want %q", e.Type, tt.wantType)
			}
			if e.Reason != tt.wantReason {
				t.Errorf("got reason %q, want %q", e.Reason, tt.wantReason)
			}
			if e.Message != tt.wantMessage {
				t.Errorf("got message %q, want %q", e.Message, tt.wantMessage)
			}
			if e.Source.Component != "test-operator" {
				t.Errorf("got source component %q, want %q", e.Source.Component, "test-operator")
			}
			// The replica that recorded it: the host name, a pod's name.
			if host, _ := os.Hostname(); e.Source.Host != host {
				t.Errorf("got source host %q, want the host name %q", e.Source.Host, host)
			}
			if e.InvolvedObject != tt.wantObject {
				t.Errorf("got involved object %+v, want %+v", e.InvolvedObject, tt.wantObject)
			}
		})
	}
}

// Shutdown writes what is still queued, then drops what comes after.
func TestRecorderShutdownWritesQueuedEvents(t *testing.T) {
	client := fake.NewClientset()
	r, err := event.New(event.Config{Client: client, Component: "test-operator"})
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	const n = 10
	for i := range n {
		r.Normal(pod, fmt.Sprintf("Queued%d", i), "queued just before the shutdown")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.Shutdown(ctx)
	r.Shutdown(ctx) // a second call does nothing
	r.Warning(pod, "Late", "recorded after shutdown")

	goleak.VerifyNone(t)
	list, err := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("got error %v listing events, want nil", err)
	}
	if len(list.Items) != n {
		t.Errorf("got %d events after Shutdown, want the %d queued before it", len(list.Items), n)
	}
	for _, e := range list.Items {
		if e.Reason == "Late" {
			t.Errorf("got event %q recorded after shutdown, want none", e.Reason)
		}
	}
}

// Shutdown gives up on what it cannot write by its context's deadline: an
// API server that does not answer does not hold the process.
func TestRecorderShutdownEndsAtItsDeadline(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused") // retried, as a network error is
	})
	r, err := event.New(event.Config{Client: client, Component: "test-operator"})
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	r.Normal(pod, "Unwritable", "the server is away")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	r.Shutdown(ctx)
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Shutdown took %s, want it to end at its 200ms deadline", took)
	}
	goleak.VerifyNone(t)
}

// A Recorder starts its goroutines with its first event, and none remains
// after Shutdown: one that never records holds none, even when nobody can
// call its Shutdown any more.
func TestRecorderLeavesNoGoroutine(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	tests := []struct {
		name     string
		record   bool
		shutdown bool
	}{
		{name: "a recorder that never records and is never shut down leaves none"},
		{name: "a recorder that never records leaves none after Shutdown", shutdown: true},
		{name: "a recorder that recorded leaves none after Shutdown", record: true, shutdown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			r, err := event.New(event.Config{Client: client, Component: "test-operator"})
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if tt.record {
				r.Normal(pod, "Created", "created")
				waitForEvents(t, client, "shop", 1)
			}
			if tt.shutdown {
				r.Shutdown(context.Background())
			}
			goleak.VerifyNone(t)
		})
	}
}

// Shutdown gives up on a write at its deadline, but returns only once that
// write has: no write runs after it.
func TestRecorderShutdownWaitsForTheWriteInProgress(t *testing.T) {
	client := fake.NewClientset()
	writing, release := make(chan struct{}), make(chan struct{})
	started := sync.OnceFunc(func() { close(writing) })
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		started()
		<-release // a write that takes its time, whatever its context says
		return true, nil, errors.New("connection refused")
	})
	r, err := event.New(event.Config{Client: client, Component: "test-operator"})
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	r.Normal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}, "Slow", "written slowly")
	<-writing

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		r.Shutdown(ctx)
	}()
	select {
	case <-returned:
		t.Error("got Shutdown returned while a write was in progress, want it to wait for the write")
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("got Shutdown still running 10s after the write returned, want it returned")
	}
	goleak.VerifyNone(t)
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     event.Config
		wantErr error
	}{
		{name: "a config with a client and a component is valid", cfg: event.Config{Client: fake.NewClientset(), Component: "op"}},
		{name: "a config without a client is refused", cfg: event.Config{Component: "op"}, wantErr: event.ErrInvalidConfig},
		{name: "a config without a component is refused", cfg: event.Config{Client: fake.NewClientset()}, wantErr: event.ErrInvalidConfig},
		{name: "a custom scheme is accepted", cfg: event.Config{Client: fake.NewClientset(), Component: "op", Scheme: runtime.NewScheme()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := event.New(tt.cfg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if r != nil {
				r.Shutdown(context.Background())
			}
			goleak.VerifyNone(t)
		})
	}
}

func TestCorrelatorOptions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "pod-uid"}}
	const n = 40
	recordN := func(t *testing.T, cfg event.Config) kubernetes.Interface {
		t.Helper()
		client := fake.NewClientset()
		cfg.Client, cfg.Component = client, "test-operator"
		r, err := event.New(cfg)
		if err != nil {
			t.Fatalf("got error %v, want nil", err)
		}
		t.Cleanup(func() { r.Shutdown(context.Background()) })
		for i := range n {
			r.Normal(pod, "Terminated", "terminated pod shop/web-%d", i)
		}
		return client
	}

	t.Run("client-go's defaults fold similar events", func(t *testing.T) {
		client := recordN(t, event.Config{})
		deadline := time.Now().Add(10 * time.Second)
		for {
			list, err := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range list.Items {
				if strings.HasPrefix(e.Message, "(combined from similar events)") {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("got %d events and none combined after 10s, want similar events folded into one", len(list.Items))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("raised limits keep one event per message", func(t *testing.T) {
		client := recordN(t, event.Config{Correlator: record.CorrelatorOptions{BurstSize: 100, QPS: 10, MaxEvents: 1000}})
		events := waitForEvents(t, client, "shop", n)
		seen := map[string]bool{}
		for _, e := range events {
			if e.Count != 1 {
				t.Errorf("got count %d for %q, want 1", e.Count, e.Message)
			}
			seen[e.Message] = true
		}
		if len(seen) != n {
			t.Errorf("got %d distinct messages, want %d", len(seen), n)
		}
	})
}

// A write the API server did not answer is retried after a delay on the
// recorder's clock: no retry until the clock moves, then one, which writes
// the event.
func TestRecorderRetriesOnItsClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	client := fake.NewClientset()
	var tries atomic.Int64
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		if tries.Add(1) == 1 {
			return true, nil, errors.New("connection refused") // retried, as a network error is
		}
		return false, nil, nil
	})
	r, err := event.NewWithClock(event.Config{Client: client, Component: "test-operator"}, clk)
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	defer r.Shutdown(context.Background())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	r.Normal(pod, "Retried", "written on the second try")

	// The retry waits on the fake clock (a real one would leave none).
	for deadline := time.Now().Add(10 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no retry waits on the recorder's clock after %d tries", tries.Load())
		}
	}
	if got := tries.Load(); got != 1 {
		t.Fatalf("got %d tries before the clock moved, want 1", got)
	}
	clk.Step(10 * time.Second) // client-go's delay: the first retry is within it
	events := waitForEvents(t, client, "shop", 1)
	if events[0].Reason != "Retried" || tries.Load() != 2 {
		t.Errorf("got event %q after %d tries, want Retried after 2", events[0].Reason, tries.Load())
	}
}
