package deadline

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// waitDone waits for ctx to be done, at most a few seconds of real time
// (expire runs in a goroutine of its own).
func waitDone(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the handling's context was not cancelled", what)
	}
}

func TestBeginRefusesOnceTheRightHasEnded(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		until time.Time
		want  bool
	}{
		{"no limit", time.Time{}, true},
		{"before the limit", now.Add(time.Second), true},
		{"at the limit", now, false},
		{"past the limit", now.Add(-time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(clocktesting.NewFakeClock(now))
			defer d.Stop()
			d.Set(tt.until)
			_, end, ok := d.Begin(context.Background())
			if ok != tt.want {
				t.Fatalf("Begin ok = %v, want %v", ok, tt.want)
			}
			if ok && end() {
				t.Error("end reports an expiry that did not happen")
			}
			if got := d.Limited(); got != !tt.until.IsZero() {
				t.Errorf("Limited() = %v", got)
			}
		})
	}
}

// The running handlings are cancelled when the right ends, and end says
// so; a handling that began after a renewal is not.
func TestTheRunningHandlingsAreCancelledAtTheEnd(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	d := New(clk)
	defer d.Stop()
	d.Set(clk.Now().Add(time.Second))
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	hctx, end, ok := d.Begin(parent)
	if !ok {
		t.Fatal("refused before the limit")
	}
	// Moved later: the first timer does nothing.
	d.Set(clk.Now().Add(2 * time.Second))
	clk.Step(time.Second)
	time.Sleep(20 * time.Millisecond)
	if hctx.Err() != nil {
		t.Fatal("cancelled at the old limit, after it was moved later")
	}
	clk.Step(time.Second)
	waitDone(hctx, t, "at the limit")
	if parent.Err() != nil {
		t.Fatal("the parent context was cancelled")
	}
	if !end() {
		t.Error("end does not report the expiry")
	}
	if _, _, ok := d.Begin(parent); ok {
		t.Error("Begin accepted past the limit")
	}
	d.Set(clk.Now().Add(time.Minute))
	hctx, end, ok = d.Begin(parent)
	if !ok {
		t.Fatal("refused after a renewal")
	}
	cancelParent()
	if end() || hctx.Err() == nil {
		t.Error("a handling stopped by its parent is reported as expired, or its context not released")
	}
}

// After Stop, no timer is armed: a limit that passes cancels nothing, and
// the limit still refuses new handlings.
func TestStopArmsNoTimer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	d := New(clk)
	hctx, end, ok := d.Begin(context.Background())
	if !ok {
		t.Fatal("refused with no limit")
	}
	defer end()
	d.Stop()
	d.Set(clk.Now().Add(time.Second))
	if clk.HasWaiters() {
		t.Error("a timer was armed after Stop")
	}
	clk.Step(time.Second)
	time.Sleep(20 * time.Millisecond)
	if hctx.Err() != nil {
		t.Error("a handling was cancelled after Stop")
	}
	if _, _, ok := d.Begin(context.Background()); ok {
		t.Error("Begin accepted past the limit")
	}
}
