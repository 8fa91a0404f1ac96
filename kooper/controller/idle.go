package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
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

// idleWatch forwards the events of a watch, and stops it once nothing has
// arrived for timeout.
type idleWatch struct {
	in       watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

// watchWithIdleTimeout wraps w so that it ends (its result channel closes,
// and w is stopped) when no event arrived for timeout; onIdle is called
// then.
func watchWithIdleTimeout(w watch.Interface, timeout time.Duration, onIdle func()) watch.Interface {
	iw := &idleWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go iw.run(timeout, onIdle)
	return iw
}

func (w *idleWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *idleWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *idleWatch) run(timeout time.Duration, onIdle func()) {
	defer close(w.out)
	idle := time.NewTimer(timeout)
	defer idle.Stop()
	for {
		select {
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			idle.Reset(timeout)
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-idle.C:
			onIdle()
			w.Stop()
			return
		case <-w.stop:
			return
		}
	}
}
