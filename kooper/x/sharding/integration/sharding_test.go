package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// Test timings: a replica that stops renewing loses its slots after 6s.
const (
	shardLease    = 6 * time.Second
	shardDeadline = 4 * time.Second
	shardRetry    = time.Second
	shardSlots    = 32
)

// shardLog records every handling of every replica of a test.
type shardLog struct {
	mu       sync.Mutex
	running  map[string]string // key → replica handling it now
	overlaps []string
	last     map[string]string // key → resourceVersion last handled
	by       map[string]int    // replica → handlings
	total    int
}

func newShardLog() *shardLog {
	return &shardLog{running: map[string]string{}, last: map[string]string{}, by: map[string]int{}}
}

func (l *shardLog) handler(replica string) controller.Handler {
	return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
		m := obj.(metav1.Object)
		key := m.GetNamespace() + "/" + m.GetName()
		l.mu.Lock()
		if other, busy := l.running[key]; busy {
			l.overlaps = append(l.overlaps, fmt.Sprintf("%s handled by %s while %s handles it", key, replica, other))
		}
		l.running[key] = replica
		l.mu.Unlock()
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
		}
		l.mu.Lock()
		delete(l.running, key)
		l.last[key] = m.GetResourceVersion()
		l.by[replica]++
		l.total++
		l.mu.Unlock()
		return nil
	})
}

// handledAll reports whether every ConfigMap of ns was handled at its
// current version, and how many were not.
func (l *shardLog) handledAll(t *testing.T, client kubernetes.Interface, ns string) (bool, int) {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false, -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	missing := 0
	for _, cm := range list.Items {
		if l.last[ns+"/"+cm.Name] != cm.ResourceVersion {
			missing++
		}
	}
	return missing == 0, missing
}

// partition is a transport that can be cut: new requests fail and open
// responses (watches) stop delivering, as if the network went away. It
// also counts the requests, by verb and resource.
type partition struct {
	cut atomic.Bool

	mu       sync.Mutex
	requests map[string]int
}

// take returns the requests counted since the last take.
func (p *partition) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.requests
	p.requests = map[string]int{}
	return out
}

// requestKind is "VERB resource" of a request, e.g. "PUT leases",
// "GET configmaps?watch".
func requestKind(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	resource := parts[len(parts)-1]
	for i, p := range parts {
		if (p == "leases" || p == "configmaps") && i < len(parts) {
			resource = p
		}
	}
	kind := req.Method + " " + resource
	if req.URL.Query().Get("watch") == "true" {
		kind += "?watch"
	}
	return kind
}

var errPartitioned = errors.New("partitioned by the test")

func (p *partition) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if p.cut.Load() {
			return nil, errPartitioned
		}
		p.mu.Lock()
		if p.requests == nil {
			p.requests = map[string]int{}
		}
		p.requests[requestKind(req)]++
		p.mu.Unlock()
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body = &cuttableBody{ReadCloser: resp.Body, p: p}
		}
		return resp, err
	})
}

type cuttableBody struct {
	io.ReadCloser
	p *partition
}

func (b *cuttableBody) Read(buf []byte) (int, error) {
	if b.p.cut.Load() {
		return 0, errPartitioned
	}
	return b.ReadCloser.Read(buf)
}

// replica is one in-process replica of a sharded controller.
type replica struct {
	name   string
	runner *sharding.Runner
	ctrl   *controller.Controller
	net    *partition
	stop   func() error
	done   <-chan struct{}
	// cacheCalls counts the lists and watches of the controller's cache
	// (its reflector's), not the moves' watches.
	cacheCalls atomic.Int64
}

// counted counts the List and Watch calls to a Retriever.
type counted struct {
	controller.Retriever
	calls *atomic.Int64
}

func (c counted) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	c.calls.Add(1)
	return c.Retriever.List(ctx, opts)
}

func (c counted) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c.calls.Add(1)
	return c.Retriever.Watch(ctx, opts)
}

func (c counted) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Retriever)
}

// startReplica runs a replica of the group's ConfigMap controller in ns on
// cluster c, with shardSlots slots.
func startReplica(t *testing.T, c *envtest.Cluster, group, ns, name string, log *shardLog) *replica {
	t.Helper()
	return startReplicaOf(t, c, group, ns, name, shardSlots, log)
}

// startReplicaOf is startReplica with slots slots.
func startReplicaOf(t *testing.T, c *envtest.Cluster, group, ns, name string, slots int, log *shardLog) *replica {
	t.Helper()
	r := &replica{name: name, net: &partition{}}
	cfg := c.Config()
	cfg.QPS, cfg.Burst = 200, 400
	cfg.WrapTransport = r.net.wrap
	client := kubernetes.NewForConfigOrDie(cfg)
	var err error
	r.runner, err = sharding.New(sharding.Config{
		Name: group, Namespace: ns, Client: client.CoordinationV1(), Identity: name, Slots: slots,
		LeaseDuration: shardLease, RenewDeadline: shardDeadline, RetryPeriod: shardRetry,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.ctrl, err = controller.New(controller.Config{
		Name: "shard-" + name, Retriever: counted{r.runner.Retriever(configMaps(client, ns)), &r.cacheCalls}, Handler: r.runner.Handler(log.handler(name)),
		ConcurrentWorkers: 4, ShutdownTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.stop, r.done = runInBackground(t, func(ctx context.Context) error { return r.runner.Run(ctx, r.ctrl) })
	return r
}

// balanced waits until the replicas own every slot between them, each its
// quota, with no slot twice.
func balanced(t *testing.T, timeout time.Duration, what string, replicas ...*replica) {
	t.Helper()
	eventually(t, timeout, what, func() bool {
		seen := map[int]bool{}
		for _, r := range replicas {
			slots := r.runner.Slots()
			if len(slots) < shardSlots/len(replicas) {
				return false
			}
			for _, s := range slots {
				if seen[s] {
					return false
				}
				seen[s] = true
			}
		}
		return len(seen) == shardSlots
	})
	var parts []string
	for _, r := range replicas {
		parts = append(parts, fmt.Sprintf("%s %d", r.name, len(r.runner.Slots())))
	}
	t.Logf("%s: slots %s", what, strings.Join(parts, ", "))
}

// createConfigMaps creates n ConfigMaps in ns, 8 at a time.
func createConfigMaps(t *testing.T, client kubernetes.Interface, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}, Data: map[string]string{"round": "0"}}
			if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// churn updates random ConfigMaps of ns until stop is called; a write that
// fails (the API server restarting) is skipped.
func churn(client kubernetes.Interface, ns string, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for round := 0; ctx.Err() == nil; round++ {
				name := fmt.Sprintf("cm-%04d", rng.IntN(n))
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"round": fmt.Sprint(round), "writer": fmt.Sprint(w)}}
				_, _ = client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// One controller, sharded over replicas that come and go: two scale-ups, a
// scale-down, a replica cut off from the API server (as a SIGKILL or a
// partition looks to the others) and an API server restart, while the
// objects keep changing. No key is ever handled by two replicas at once,
// every object's final version is handled, and with the gate on the API
// server sends each replica its slots' objects only.
func TestShardedReplicasNeverHandleOneKeyTwice(t *testing.T) {
	client, ns := setup(t)
	const objects = 600
	createConfigMaps(t, client, ns, objects)
	log := newShardLog()
	group := "cms"
	began := time.Now()

	a := startReplica(t, cluster, group, ns, "a", log)
	eventually(t, 30*time.Second, "replica a handles every ConfigMap", func() bool { ok, _ := log.handledAll(t, client, ns); return ok })
	if got := a.runner.Mode(); got != sharding.ModeServerSide {
		t.Fatalf("got mode %q on a cluster with ShardedListAndWatch, want %q", got, sharding.ModeServerSide)
	}
	t.Logf("a alone: every ConfigMap handled %s after start", time.Since(began).Round(time.Millisecond))
	aSynced := a.cacheCalls.Load()
	stopChurn := churn(client, ns, objects)

	b := startReplica(t, cluster, group, ns, "b", log)
	balanced(t, 30*time.Second, "scale-up to 2", a, b)
	c := startReplica(t, cluster, group, ns, "c", log)
	balanced(t, 30*time.Second, "scale-up to 3", a, b, c)

	// The API server sends each replica its share only: each cache holds
	// exactly the objects of its slots, and together, once the watches
	// have moved to the slots just taken, every object.
	settled := func() bool {
		n := 0
		for _, r := range []*replica{a, b, c} {
			objs, _ := r.ctrl.List()
			mine := map[int]bool{}
			for _, s := range r.runner.Slots() {
				mine[s] = true
			}
			for _, o := range objs {
				if !mine[sharding.SlotOf(o.(metav1.Object).GetUID(), shardSlots)] {
					return false
				}
			}
			n += len(objs)
		}
		return n == objects
	}
	listedAgain := time.Now()
	eventually(t, 30*time.Second, "the caches have listed again", settled)
	t.Logf("the caches held their slots' objects %s after the slots were balanced", time.Since(listedAgain).Round(time.Millisecond))
	// a gave up slots twice: its watch moved, its reflector never listed
	// or watched again.
	if again := a.cacheCalls.Load() - aSynced; again != 0 {
		t.Errorf("a's cache listed or watched again %d times across two moves, want 0: the watch moves in-stream", again)
	}
	cached := 0
	for _, r := range []*replica{a, b, c} {
		objs, ok := r.ctrl.List()
		if !ok {
			t.Fatalf("%s: cache not synced", r.name)
		}
		mine := map[int]bool{}
		for _, s := range r.runner.Slots() {
			mine[s] = true
		}
		for _, o := range objs {
			if s := sharding.SlotOf(o.(metav1.Object).GetUID(), shardSlots); !mine[s] {
				t.Errorf("%s caches %s of slot %d, not one of its slots %v", r.name, o.(metav1.Object).GetName(), s, r.runner.Slots())
			}
		}
		t.Logf("%s caches %d of %d ConfigMaps", r.name, len(objs), objects)
		cached += len(objs)
	}
	if cached != objects {
		t.Errorf("the replicas cache %d ConfigMaps between them, want %d", cached, objects)
	}

	// Scale down: b leaves cleanly, and its slots move at once.
	left := time.Now()
	if err := b.stop(); err != nil {
		t.Fatalf("b: %v", err)
	}
	balanced(t, 10*time.Second, "scale-down to 2", a, c)
	t.Logf("b's slots taken %s after it was stopped", time.Since(left).Round(time.Millisecond))

	// At rest, a replica writes its Lease once per retry period and
	// nothing else: a renewal must not set off the others'.
	a.net.take()
	time.Sleep(4 * shardRetry)
	// (Caches may still be listing again: only the Lease requests count.)
	if rest := a.net.take(); rest["PUT leases"] > 5 || rest["POST leases"]+rest["GET leases"] > 0 {
		t.Errorf("a made %v in %s at rest, want about 4 Lease renewals and no other Lease request", rest, 4*shardRetry)
	} else {
		t.Logf("at rest, a made %v in %s", rest, 4*shardRetry)
	}

	// What a move costs: the requests of every replica from d's start
	// until the slots are balanced (renewals included).
	for _, r := range []*replica{a, c} {
		r.net.take()
	}
	moveBegan := time.Now()
	d := startReplica(t, cluster, group, ns, "d", log)
	balanced(t, 30*time.Second, "scale-up to 3 again", a, c, d)
	t.Logf("scale-up to 3 again took %s; requests: a %v, c %v, d (new) %v", time.Since(moveBegan).Round(time.Millisecond), a.net.take(), c.net.take(), d.net.take())

	// c is cut off: it stops handling after its renew deadline, and the
	// others take its slots after its lease duration.
	cut := time.Now()
	c.net.cut.Store(true)
	eventually(t, shardDeadline+3*time.Second, "c stops handling", func() bool { return len(c.runner.Slots()) == 0 })
	t.Logf("c stopped handling %s after it was cut off", time.Since(cut).Round(time.Millisecond))
	balanced(t, shardLease+10*time.Second, "c's slots taken by a and d", a, d)
	t.Logf("c's slots taken %s after it was cut off", time.Since(cut).Round(time.Millisecond))
	if err := c.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("c (cut off) stopped with %v", err)
	}

	// The API server restarts; the replicas keep their slots or take them
	// back.
	if err := cluster.RestartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	balanced(t, 60*time.Second, "after an API server restart", a, d)

	stopChurn()
	eventually(t, 60*time.Second, "every ConfigMap's final version is handled", func() bool { ok, _ := log.handledAll(t, client, ns); return ok })
	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("%d handlings by replica %v", log.total, log.by)
	if len(log.overlaps) > 0 {
		t.Fatalf("%d overlapping handlings, e.g. %s", len(log.overlaps), log.overlaps[0])
	}
}

// Without the ShardedListAndWatch gate (managed clusters today), the
// replicas detect it, each caches every object, and each handles only the
// objects of its slots; a slot moved by a clean stop is taken at once.
func TestShardingWithoutTheFeatureGateFiltersOnTheClient(t *testing.T) {
	off, err := envtest.Start(context.Background(), envtest.Options{BinDir: cluster.BinDir(), FeatureGates: map[string]bool{"ShardedListAndWatch": false}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = off.Stop() })
	client := kubernetes.NewForConfigOrDie(off.Config())
	ns := "sharding-off"
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const objects = 300
	createConfigMaps(t, client, ns, objects)
	log := newShardLog()
	replicas := []*replica{
		startReplica(t, off, "cms", ns, "a", log),
		startReplica(t, off, "cms", ns, "b", log),
		startReplica(t, off, "cms", ns, "c", log),
	}
	balanced(t, 30*time.Second, "three replicas", replicas...)
	eventually(t, 30*time.Second, "every ConfigMap is handled", func() bool { ok, _ := log.handledAll(t, client, ns); return ok })
	for _, r := range replicas {
		if got := r.runner.Mode(); got != sharding.ModeClientSide {
			t.Errorf("%s: got mode %q without the gate, want %q", r.name, got, sharding.ModeClientSide)
		}
		if objs, _ := r.ctrl.List(); len(objs) != objects {
			t.Errorf("%s caches %d ConfigMaps, want all %d (client-side)", r.name, len(objs), objects)
		}
	}
	stopChurn := churn(client, ns, objects)
	if err := replicas[1].stop(); err != nil {
		t.Fatal(err)
	}
	balanced(t, 10*time.Second, "b stopped", replicas[0], replicas[2])
	stopChurn()
	eventually(t, 30*time.Second, "every ConfigMap's final version is handled", func() bool { ok, _ := log.handledAll(t, client, ns); return ok })
	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("%d handlings by replica %v", log.total, log.by)
	if len(log.overlaps) > 0 {
		t.Fatalf("%d overlapping handlings, e.g. %s", len(log.overlaps), log.overlaps[0])
	}
	for _, r := range []string{"a", "b", "c"} {
		if log.by[r] == 0 {
			t.Errorf("replica %s handled nothing", r)
		}
	}
}

// Server-side, a replica that holds no slot (two replicas, one slot) asks
// the API server for no object: its cache syncs, empty, and it handles
// nothing. Once the other one stops, it takes the slot, its watch moves to
// it, and it handles every object.
func TestAReplicaWithNoSlotCachesNothing(t *testing.T) {
	client, ns := setup(t)
	const objects = 50
	createConfigMaps(t, client, ns, objects)
	log := newShardLog()
	replicas := []*replica{
		startReplicaOf(t, cluster, "one", ns, "a", 1, log),
		startReplicaOf(t, cluster, "one", ns, "b", 1, log),
	}
	// Which replica holds the slot is read afresh each time: a replica that
	// starts before it sees the other's Lease takes the slot, then gives it
	// up once it does, and the other takes it (seen under load: the first
	// look named the wrong one idle).
	var holder, idle *replica
	eventually(t, 30*time.Second, "one replica holds the slot and has handled every ConfigMap, and the other's cache has synced and holds nothing", func() bool {
		a, b := len(replicas[0].runner.Slots()), len(replicas[1].runner.Slots())
		switch {
		case a == 1 && b == 0:
			holder, idle = replicas[0], replicas[1]
		case a == 0 && b == 1:
			holder, idle = replicas[1], replicas[0]
		default:
			return false
		}
		if ok, _ := log.handledAll(t, client, ns); !ok || !idle.ctrl.HasSynced() {
			return false
		}
		objs, _ := idle.ctrl.List()
		return len(objs) == 0
	})
	if got := idle.runner.Mode(); got != sharding.ModeServerSide {
		t.Fatalf("got mode %q, want %q", got, sharding.ModeServerSide)
	}
	if err := idle.ctrl.SyncError(); err != nil {
		t.Errorf("the idle replica's cache: %v", err)
	}
	log.mu.Lock()
	before := log.by[idle.name]
	log.mu.Unlock()

	if err := holder.stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the idle replica takes the slot", func() bool { return len(idle.runner.Slots()) == 1 })
	eventually(t, 30*time.Second, "it caches every ConfigMap", func() bool {
		objs, _ := idle.ctrl.List()
		return len(objs) == objects
	})
	// Touched once more: each change is handled by the replica that holds
	// the slot now.
	stopChurn := churn(client, ns, objects)
	time.Sleep(200 * time.Millisecond)
	stopChurn()
	eventually(t, 30*time.Second, "every ConfigMap's final version is handled", func() bool { ok, _ := log.handledAll(t, client, ns); return ok })
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.by[idle.name] == before {
		t.Errorf("%s handled nothing once it held the slot", idle.name)
	}
	if len(log.overlaps) > 0 {
		t.Fatalf("%d overlapping handlings, e.g. %s", len(log.overlaps), log.overlaps[0])
	}
}
