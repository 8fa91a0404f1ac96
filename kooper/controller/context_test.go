package controller

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

func TestTheHandlingContextTimesOutLikeContextWithDeadline(t *testing.T) {
	ctx := newHandlingContext(context.Background(), 30*time.Millisecond)
	defer ctx.release()
	if err := ctx.Err(); err != nil {
		t.Fatalf("got Err %v before the deadline, want nil", err)
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > 30*time.Millisecond {
		t.Errorf("got Deadline %v %v, want one within 30ms", d, ok)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5s after a 30ms timeout")
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got Err %v, want %v", err, context.DeadlineExceeded)
	}
}

func TestTheHandlingContextReportsAPassedDeadlineWithoutDone(t *testing.T) {
	ctx := newHandlingContext(context.Background(), time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got Err %v, want %v", err, context.DeadlineExceeded)
	}
}

func TestTheHandlingContextFollowsItsParent(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	ctx := newHandlingContext(parent, time.Hour)
	defer ctx.release()
	if got := ctx.Value(key{}); got != "v" {
		t.Errorf("got Value %v, want v", got)
	}
	cancel()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("got Err %v before Done, want %v", err, context.Canceled)
	}
	<-ctx.Done()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("got Err %v after Done, want %v", err, context.Canceled)
	}
}

func TestChildrenOfTheHandlingContextStartNoGoroutine(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := newHandlingContext(parent, time.Hour)
	defer ctx.release()
	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	for range 100 {
		_, c := context.WithTimeout(ctx, time.Hour)
		cancels = append(cancels, c)
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Errorf("got %d goroutines after deriving 100 contexts, want about %d", after, before)
	}
	cancel()
	for _, c := range cancels {
		c()
	}
}

func BenchmarkHandlingContext(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := newHandlingContext(parent, time.Minute)
			_ = c.Err()
			c.release()
		}
	})
	b.Run("context.WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, cancel := context.WithTimeout(parent, time.Minute)
			_ = c.Err()
			cancel()
		}
	})
}
