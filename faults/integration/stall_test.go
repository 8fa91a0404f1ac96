package integration_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/faults"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/log"
)

// A watch whose connection stays open and carries nothing (a load balancer
// that stopped forwarding, a hung API server) is restarted once it has
// been silent for the idle bound, and the change made meanwhile is
// handled at its latest version; without the bound, the controller misses
// it for as long as the stall lasts.
//
// The client speaks HTTP/1.1, so the watch has a TCP connection of its
// own: the stall catches it, and the restarted watch gets through on a new
// one. The API server's first bookmark to an idle watch comes ~120 s in,
// well after the stall, and a stalled connection carries none anyway.
//
// With a keep-alive connection idle in the client's pool when the stall
// begins (a handler's write or a Lease renewal leaves one), the restarted
// watch's request goes out on it and waits for response headers that never
// come. This run found that the library bounded a watch only once Watch had
// returned, so that request waited for ever; WithWatchIdleTimeout now bounds
// the request until its answer too, and the watch is restarted again.
func TestStalledWatch(t *testing.T) {
	const idle = 10 * time.Second
	tests := []struct {
		name    string
		disable bool // a negative idle bound
		pooled  bool // a connection idle in the client's pool is stalled too
	}{
		{name: "a stalled watch is restarted after the idle bound and the latest version handled"},
		{name: "without an idle bound (WithWatchIdleTimeout) the change waits for the stall to heal", disable: true},
		{name: "a stalled watch restarted onto a stalled pooled connection is restarted again", pooled: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			idleTimeout := idle
			if tc.disable {
				idleTimeout = -1 // never
			}
			s := startStalling(t, controller.Config{
				Name:           "stall",
				ResyncInterval: -1, // a resync would hand the stale cache to the handler
			}, idleTimeout)

			if tc.pooled {
				// The watch holds its connection: this request opens another,
				// left idle in the pool.
				if _, err := s.client.CoreV1().ConfigMaps(s.ns).Get(ctx, "cm-0", metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			heal, err := s.proxy.Stall()
			if err != nil {
				t.Fatal(err)
			}
			stalled := time.Now()
			heal = sync.OnceFunc(heal)
			defer heal()
			t.Logf("connections to the proxy stalled: %d", established(t, s.port))
			before := s.handlings()
			latest := s.change(ctx, t, 3) // directly, not through the proxy

			if !tc.disable {
				// A liveness bound, well above the timeout: not a speed test.
				at, ok := s.handled(latest, stalled.Add(3*idle))
				if !ok {
					t.Fatalf("version %s not handled %s after the stall (last handled %s); log:\n%s", latest, 3*idle, s.lastRV(), s.log)
				}
				restarts := s.log.restarts(stalled)
				t.Logf("stall → latest version handled: %s (the idle bound %s); restarts logged at %s after the stall",
					at.Sub(stalled).Round(time.Millisecond), idle, since(stalled, restarts))
				if len(restarts) == 0 {
					t.Errorf("handled with no restart of the watch logged: the stall did not hold it; log:\n%s", s.log)
				} else if n := s.handlingsBefore(restarts[0]); n != before {
					t.Errorf("%d handlings during the stall before the watch's restart, want none", n-before)
				}
			} else {
				if at, ok := s.handled(latest, stalled.Add(2*idle)); ok {
					t.Fatalf("version %s handled %s after the stall, with the watch stalled: got handled, want missed", latest, at.Sub(stalled).Round(time.Millisecond))
				}
				if n := s.handlings(); n != before {
					t.Errorf("%d handlings during the stall, want none", n-before)
				}
				if r := s.log.restarts(stalled); len(r) != 0 {
					t.Errorf("%d restarts of the watch logged without the idle bound, want none", len(r))
				}
				heal()
				healedAt := time.Now()
				at, ok := s.handled(latest, healedAt.Add(idle))
				if !ok {
					t.Fatalf("version %s not handled %s after the stall healed (last handled %s)", latest, idle, s.lastRV())
				}
				t.Logf("missed for the whole %s stall; heal → latest version handled: %s",
					healedAt.Sub(stalled).Round(time.Millisecond), at.Sub(healedAt).Round(time.Millisecond))
			}
		})
	}
}

// stalling is a controller of one ConfigMap, cm-0, in a namespace of its
// own, run in this process through a Proxy over HTTP/1.1.
type stalling struct {
	admin  kubernetes.Interface // straight to the API server
	client kubernetes.Interface // the controller's, through the proxy
	ns     string
	proxy  *faults.Proxy
	port   string
	log    *lines
	lastCM *corev1.ConfigMap // as last written

	mu    sync.Mutex
	rvs   []string    // cm-0's versions, in the order handled
	rvsAt []time.Time // when each was handled
}

// startStalling runs a controller configured by cfg (Retriever, Handler and
// Logger are set here) until it has handled cm-0, and stops it after the
// test, failing it if Run does not return or leaves goroutines behind.
func startStalling(t *testing.T, cfg controller.Config, idleTimeout time.Duration) *stalling {
	t.Helper()
	ctx := context.Background()
	s := &stalling{admin: kubernetes.NewForConfigOrDie(cluster.Config()), ns: fmt.Sprintf("stall-%d-%d", os.Getpid(), runs.Add(1)), log: &lines{}}
	if _, err := s.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.admin.CoreV1().Namespaces().Delete(ctx, s.ns, metav1.DeleteOptions{}) })
	cm, err := s.admin.CoreV1().ConfigMaps(s.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.lastCM = cm

	host, _ := url.Parse(cluster.Config().Host)
	if s.proxy, err = faults.NewProxy("stall", host.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.proxy.Close) // after the controller's stop below
	_, s.port, _ = strings.Cut(s.proxy.Addr(), ":")
	rc := cluster.Config()
	rc.Host = "https://" + s.proxy.Addr()
	rc.NextProtos = []string{"http/1.1"}                           // a connection per watch
	rc.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext // a transport of its own
	s.client = kubernetes.NewForConfigOrDie(rc)
	cms := s.client.CoreV1().ConfigMaps(s.ns)
	cfg.Retriever = controller.WithWatchIdleTimeout(controller.NewRetriever(cms.List, cms.Watch), idleTimeout)
	cfg.Handler = controller.HandlerFunc(func(_ context.Context, obj kruntime.Object) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.rvs = append(s.rvs, obj.(*corev1.ConfigMap).ResourceVersion)
		s.rvsAt = append(s.rvsAt, time.Now())
		return nil
	})
	cfg.Logger = log.NewStd(s.log, log.StdOptions{})
	c, err := controller.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runInTest(t, c)
	if _, ok := s.handled(cm.ResourceVersion, time.Now().Add(30*time.Second)); !ok {
		t.Fatalf("cm-0 not handled 30s after Run; log:\n%s", s.log)
	}
	return s
}

// runInTest runs c until the test ends, then fails it if Run does not
// return or leaves goroutines behind.
func runInTest(t *testing.T, c *controller.Controller) {
	t.Helper()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Run did not return 30s after its context was cancelled")
		}
		deadline := time.Now().Add(10 * time.Second)
		for left := libraryGoroutines(); len(left) > 0; left = libraryGoroutines() {
			if time.Now().After(deadline) {
				t.Fatalf("10s after Run returned, goroutines left:\n%s", strings.Join(left, "\n\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// change updates cm-0 n times and returns its latest version.
func (s *stalling) change(ctx context.Context, t *testing.T, n int) string {
	t.Helper()
	for i := range n {
		cm := s.lastCM.DeepCopy()
		cm.Data = map[string]string{"change": strconv.Itoa(i)}
		updated, err := s.admin.CoreV1().ConfigMaps(s.ns).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("updating cm-0: %v", err)
		}
		s.lastCM = updated
	}
	return s.lastCM.ResourceVersion
}

// handled waits until version rv of cm-0 is handled, or deadline; it
// returns when rv was handled.
func (s *stalling) handled(rv string, deadline time.Time) (time.Time, bool) {
	for {
		s.mu.Lock()
		for i, v := range s.rvs {
			if v == rv {
				at := s.rvsAt[i]
				s.mu.Unlock()
				return at, true
			}
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *stalling) handlings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rvs)
}

// handlingsBefore counts the handlings before t.
func (s *stalling) handlingsBefore(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.rvsAt {
		if at.Before(t) {
			n++
		}
	}
	return n
}

func (s *stalling) lastRV() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rvs) == 0 {
		return "none"
	}
	return s.rvs[len(s.rvs)-1]
}

// lines records a controller's log, each line with when it was written.
type lines struct {
	mu   sync.Mutex
	text []string
	at   []time.Time
}

func (l *lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text = append(l.text, string(b))
	l.at = append(l.at, time.Now())
	return len(b), nil
}

// restarts returns when, after t, the controller logged restarting an
// idle watch.
func (l *lines) restarts(t time.Time) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var at []time.Time
	for i, line := range l.text {
		if strings.Contains(line, "idleFor=") && l.at[i].After(t) {
			at = append(at, l.at[i])
		}
	}
	return at
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.text, "")
}

// since lists ts as durations from t.
func since(t time.Time, ts []time.Time) string {
	d := make([]string, len(ts))
	for i, at := range ts {
		d[i] = at.Sub(t).Round(time.Millisecond).String()
	}
	return "[" + strings.Join(d, " ") + "]"
}
