package integration_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/faults"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/kooper/owner"
)

// A handler that creates a child with generateName whenever its cache
// shows the parent none, run on a burst of changes of the parent while
// the controller's watches are slow (the proxy's latency; its writes go
// straight to the API server). Without read-your-own-writes, every handling
// of the burst that runs before the child's event arrives sees no child
// and creates another. With the clients made from controller.TrackWrites,
// the parent's key waits until the children's cache has seen the child
// its handling created, and exactly one is made.
func TestAHandlerReadsItsOwnWrites(t *testing.T) {
	const (
		latency = 400 * time.Millisecond // each way, on every connection of the watches
		burst   = 40                     // changes of the parent
		spacing = 25 * time.Millisecond  // between them
	)
	for _, tc := range []struct {
		name  string
		track bool
	}{
		{name: "with TrackWrites one child is created", track: true},
		{name: "without it the burst creates several", track: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A burst whose handlings all came after the child's event
			// (the machine's timing) tests nothing: with TrackWrites, up to
			// three bursts, each on a controller of its own, until one
			// holds a key for its write; every one must make one child.
			for attempt := 1; ; attempt++ {
				o := startOwnWrites(t, tc.track)
				heal, err := o.proxy.Latency(int(latency/time.Millisecond), 0)
				if err != nil {
					t.Fatal(err)
				}
				for i := range burst {
					o.change(t, i)
					time.Sleep(spacing)
				}
				// The burst's last event arrives a latency after its write;
				// the last child's a latency after its creation: wait for
				// both, and for any handling they start.
				time.Sleep(3*latency + time.Second)
				heal()
				children := o.children(t)
				waits := o.rec.count()
				t.Logf("burst %d: children created: %d; keys held until the cache had seen their writes: %d (caught up), %d (timed out); handlings: %d",
					attempt, children, waits[true], waits[false], o.handlings())
				switch {
				case tc.track && children != 1:
					t.Errorf("%d children, want 1: a handling acted on a cache older than its own write", children)
				case tc.track && waits[false] != 0:
					t.Errorf("%d waits reached the bound: the cache never saw a write it lists", waits[false])
				case tc.track && waits[true] == 0 && attempt < 3:
					continue // this burst tested nothing: another
				case tc.track && waits[true] == 0:
					t.Errorf("no key waited for its writes in %d bursts: they did not test read-your-own-writes", attempt)
				case !tc.track && children < 2:
					t.Errorf("%d children without TrackWrites, want several: the latency did not make the cache lag, so the other case proves nothing", children)
				}
				return
			}
		})
	}
}

// ownWrites is a controller of ConfigMaps labelled role=parent in a
// namespace of its own, owning those labelled role=child, run in this
// process: its retrievers through a Proxy, its writes straight to the API
// server.
type ownWrites struct {
	admin  kubernetes.Interface
	ns     string
	proxy  *faults.Proxy
	rec    *cacheWaits
	parent *corev1.ConfigMap // as last written

	mu      sync.Mutex
	handled int
}

func startOwnWrites(t *testing.T, track bool) *ownWrites {
	t.Helper()
	ctx := context.Background()
	o := &ownWrites{admin: kubernetes.NewForConfigOrDie(cluster.Config()), ns: fmt.Sprintf("ownwrites-%d-%d", os.Getpid(), runs.Add(1)), rec: &cacheWaits{}}
	if _, err := o.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.admin.CoreV1().Namespaces().Delete(ctx, o.ns, metav1.DeleteOptions{}) })
	parent, err := o.admin.CoreV1().ConfigMaps(o.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "parent", Labels: map[string]string{"role": "parent"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.parent = parent

	host, _ := url.Parse(cluster.Config().Host)
	if o.proxy, err = faults.NewProxy("ownwrites", host.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.proxy.Close) // after the controller's stop below
	watching := cluster.Config()
	watching.Host = "https://" + o.proxy.Addr()
	watching.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext // a transport of its own
	writing := cluster.Config()
	if track {
		watching, writing = controller.TrackWrites(watching), controller.TrackWrites(writing)
	}
	cms := kubernetes.NewForConfigOrDie(watching).CoreV1().ConfigMaps(o.ns)
	writer := kubernetes.NewForConfigOrDie(writing).CoreV1().ConfigMaps(o.ns)
	selected := func(role string) controller.Retriever {
		return controller.NewRetriever(
			func(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
				opts.LabelSelector = "role=" + role
				return cms.List(ctx, opts)
			},
			func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.LabelSelector = "role=" + role
				return cms.Watch(ctx, opts)
			})
	}
	children := controller.Owns[*corev1.ConfigMap](selected("child"))
	handler := controller.Typed(func(ctx context.Context, p *corev1.ConfigMap) error {
		o.mu.Lock()
		o.handled++
		o.mu.Unlock()
		if len(children.Of(p)) > 0 {
			return nil
		}
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "child-", Namespace: p.Namespace, Labels: map[string]string{"role": "child"},
		}}
		if err := owner.SetController(p, child, corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil {
			return err
		}
		_, err := writer.Create(ctx, child, metav1.CreateOptions{})
		return err
	})
	logs := &lines{}
	c, err := controller.New(controller.Config{
		Name: "ownwrites", Handler: handler, Retriever: selected("parent"),
		Logger: log.NewStd(logs, log.StdOptions{}), MetricsRecorder: o.rec,
	}, children)
	if err != nil {
		t.Fatal(err)
	}
	runInTest(t, c)
	// The parent is handled once before the latency begins: it creates
	// the first child, which the burst then deletes.
	deadline := time.Now().Add(30 * time.Second)
	for o.children(t) != 1 || len(children.Of(parent)) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the parent's first child not created and cached 30s after Run; log:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	o.rec.reset()
	return o
}

// change writes the parent's data: one change of the burst. The first
// also deletes the child, so that a handling of the burst creates one,
// which the handlings after it race.
func (o *ownWrites) change(t *testing.T, i int) {
	t.Helper()
	ctx := context.Background()
	if i == 0 {
		if err := o.admin.CoreV1().ConfigMaps(o.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "role=child"}); err != nil {
			t.Fatal(err)
		}
	}
	p := o.parent.DeepCopy()
	p.Data = map[string]string{"change": strconv.Itoa(i)}
	updated, err := o.admin.CoreV1().ConfigMaps(o.ns).Update(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("changing the parent: %v", err)
	}
	o.parent = updated
}

// children counts the children on the API server.
func (o *ownWrites) children(t *testing.T) int {
	t.Helper()
	list, err := o.admin.CoreV1().ConfigMaps(o.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "role=child"})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func (o *ownWrites) handlings() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.handled
}

// cacheWaits is a MetricsRecorder counting ObserveCacheWait by outcome,
// and nothing else.
type cacheWaits struct {
	mu    sync.Mutex
	waits map[bool]int
}

func (c *cacheWaits) ObserveCacheWait(_ string, caughtUp bool, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waits == nil {
		c.waits = map[bool]int{}
	}
	c.waits[caughtUp]++
}

func (*cacheWaits) IncQueuedEvent(string, string)               {}
func (*cacheWaits) ObserveQueueWait(string, time.Duration)      {}
func (*cacheWaits) ObserveHandling(string, bool, time.Duration) {}
func (*cacheWaits) IncRetry(string)                             {}
func (*cacheWaits) IncDropped(string, string)                   {}
func (*cacheWaits) IncPanic(string)                             {}
func (*cacheWaits) AddQueueLength(string, int)                  {}
func (*cacheWaits) IncRetrieveError(string, string)             {}

func (c *cacheWaits) count() map[bool]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return map[bool]int{true: c.waits[true], false: c.waits[false]}
}

func (c *cacheWaits) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = nil
}
