package controller

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/internal/handling"
)

// On the real clock the handling context is context.WithTimeout's: its
// deadline is reported, and its Err says DeadlineExceeded.
func TestTheHandlingContextTimesOutOnTheRealClock(t *testing.T) {
	ctx, cancel := handlingContext(context.Background(), clock.RealClock{}, 30*time.Millisecond, handling.Info{})
	defer cancel()
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

// On an injected clock the timeout passes when that clock says so, and
// the context is cancelled with the cause DeadlineExceeded.
func TestTheHandlingContextTimesOutOnTheInjectedClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ctx, cancel := handlingContext(context.Background(), clk, time.Minute, handling.Info{})
	defer cancel()
	clk.Step(time.Minute - time.Nanosecond)
	if err := ctx.Err(); err != nil {
		t.Fatalf("got Err %v before the timeout, want nil", err)
	}
	clk.Step(time.Nanosecond)
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("got cause %v, want %v", cause, context.DeadlineExceeded)
	}
}

// Cancelling a handling context frees its timer.
func TestCancellingTheHandlingContextStopsItsTimer(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ctx, cancel := handlingContext(context.Background(), clk, time.Minute, handling.Info{})
	if !clk.HasWaiters() {
		t.Fatal("no timer armed for the timeout")
	}
	cancel()
	if clk.HasWaiters() {
		t.Error("the timeout's timer is still armed after cancel")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
		t.Errorf("got cause %v, want %v", cause, context.Canceled)
	}
}

func TestTheHandlingContextFollowsItsParentAndCarriesTheHandling(t *testing.T) {
	for _, clk := range []clock.WithTickerAndDelayedExecution{clock.RealClock{}, testingclock.NewFakeClock(time.Now())} {
		type key struct{}
		parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
		want := handling.Info{Controller: "c", Key: "ns/a", Attempt: 2}
		ctx, cancel := handlingContext(parent, clk, time.Hour, want)
		if got := ctx.Value(key{}); got != "v" {
			t.Errorf("%T: got Value %v, want v", clk, got)
		}
		if got, ok := handling.From(ctx); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%T: got handling.From %+v %v, want %+v", clk, got, ok, want)
		}
		cancelParent()
		<-ctx.Done()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("%T: got Err %v, want %v", clk, err, context.Canceled)
		}
		cancel()
	}
}
