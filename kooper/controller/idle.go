package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// A watch can die without a word: a proxy or load balancer that stops
// forwarding, a half-open connection, a server that keeps the stream open
// and sends nothing. The reflector then waits until the watch's own timeout
// (5 to 10 minutes) while the cache goes stale. HTTP/2's pings catch a dead
// connection, not a live one whose stream is stuck, and HTTP/1.1 has
// neither. The API server sends a watch that asks for bookmarks, as the
// reflector's do, one about every minute even when nothing changes
// (measured on v1.37: the first after 120 s, then every 60 s), so a watch
// that received nothing at all for a few minutes is dead: it is stopped,
// and the reflector watches again from the last version it saw, with no
// relist.
//
// The same bound applies to the watch request until the API server answers
// it: over HTTP/1.1 a new watch may go out on a pooled connection that is
// just as stuck, and would wait for its response without end (found by
// faults.Proxy.Stall). The API server answers a watch at once, so a request
// unanswered for the bound is cancelled, and the reflector watches again,
// on a new connection.

// WithWatchIdleTimeout returns r with another bound on how long its watches
// may stay silent (default 3 minutes; a controller given r uses d): a
// watch that received nothing, not even a bookmark, for d is replaced by a
// new watch from the last version the cache saw, and a watch request
// unanswered for d is cancelled. A negative d leaves silent watches alone,
// for a Retriever whose watches send no bookmarks. Shorter bounds find a
// dead stream sooner: the API server sends an idle watch a bookmark about
// every minute, so d should stay above that.
func WithWatchIdleTimeout(r Retriever, d time.Duration) Retriever { return idleBound{r, d} }

type idleBound struct {
	Retriever
	idle time.Duration
}

func (b idleBound) IsWatchListSemanticsUnSupported() bool { return watchListUnsupported(b.Retriever) }
func (b idleBound) describe() string                      { return describe(b.Retriever) }
func (b idleBound) unwrap() Retriever                     { return b.Retriever }

// idleTimeout returns the idle bound of r's watches: WithWatchIdleTimeout's
// when r (or a Retriever it wraps) carries one, the default otherwise; 0
// for none.
func idleTimeout(r Retriever) time.Duration {
	for r != nil {
		if b, ok := r.(idleBound); ok {
			return orDefault(b.idle, defaultWatchIdleTimeout)
		}
		u, ok := r.(interface{ unwrap() Retriever })
		if !ok {
			break
		}
		r = u.unwrap()
	}
	return defaultWatchIdleTimeout
}

// errWatchUnanswered is returned for a watch request the API server did not
// answer within the idle timeout.
var errWatchUnanswered = errors.New("the watch request got no answer")

// watchUnanswered opens a watch of r bounded by timeout on clk (nil: the
// real clock): the request is cancelled if unanswered for timeout, and the
// watch once it received nothing for timeout (onIdle is called in both
// cases).
func watchUnanswered(ctx context.Context, clk clock.WithDelayedExecution, r Retriever, opts metav1.ListOptions, timeout time.Duration, onIdle func()) (watch.Interface, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	wctx, cancel := context.WithCancel(ctx)
	unanswered := clk.AfterFunc(timeout, cancel)
	w, err := r.Watch(wctx, opts)
	if !unanswered.Stop() {
		// Cancelled while waiting for the answer, or just as it came.
		if err == nil {
			w.Stop()
		}
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		onIdle()
		return nil, fmt.Errorf("%w within %s", errWatchUnanswered, timeout)
	}
	if err != nil {
		cancel()
		return w, err
	}
	return watchWithIdleTimeout(clk, w, timeout, onIdle, cancel), nil
}

// idleWatch forwards the events of a watch, and stops it once nothing has
// arrived for timeout.
type idleWatch struct {
	in       watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	release  func()
}

// watchWithIdleTimeout wraps w so that it ends (its result channel closes,
// and w is stopped) when no event arrived for timeout on clk; onIdle is
// called then. release, if not nil, is called once the watch has ended (it
// cancels the request's context).
func watchWithIdleTimeout(clk clock.Clock, w watch.Interface, timeout time.Duration, onIdle func(), release func()) watch.Interface {
	if release == nil {
		release = func() {}
	}
	iw := &idleWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{}), release: release}
	go iw.run(clk, timeout, onIdle)
	return iw
}

func (w *idleWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *idleWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *idleWatch) run(clk clock.Clock, timeout time.Duration, onIdle func()) {
	defer w.release()
	defer close(w.out)
	idle := clk.NewTimer(timeout)
	defer idle.Stop()
	for {
		select {
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			if !idle.Stop() {
				select { // a fake clock's timer keeps a fired tick
				case <-idle.C():
				default:
				}
			}
			idle.Reset(timeout)
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-idle.C():
			onIdle()
			w.Stop()
			return
		case <-w.stop:
			return
		}
	}
}
