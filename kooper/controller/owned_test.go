package controller_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// In these tests ConfigMaps own Secrets: a Secret's controller reference
// names its ConfigMap.

func ownerCM(name string, uid types.UID) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
}

// childOf returns a Secret controlled by owner.
func childOf(name string, owner metav1.Object) *corev1.Secret {
	yes := true
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.GetName(),
			UID: owner.GetUID(), Controller: &yes}}}}
}

// ownerLog is the owners' handler: it records each handling as
// "name:children", children being what Of returned.
type ownerLog struct {
	children *controller.Watched[*corev1.Secret]
	mu       sync.Mutex
	calls    []string
}

func (l *ownerLog) Handle(_ context.Context, obj kruntime.Object) error {
	cm := obj.(*corev1.ConfigMap)
	var names []string
	for _, s := range l.children.Of(cm) {
		names = append(names, s.Name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, cm.Name+":"+strings.Join(names, ","))
	return nil
}

// Calls returns the handlings so far, oldest first.
func (l *ownerLog) Calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// waitCalls waits until there are n handlings and returns them.
func (l *ownerLog) waitCalls(t *testing.T, what string, n int) []string {
	t.Helper()
	eventually(t, what, func() bool { return len(l.Calls()) >= n })
	return l.Calls()
}

// Every change of a child, its creation, update and deletion, has its
// owner handled, and the handler reads the owner's children with Of; other
// owners, and children of no cached owner, are left alone.
func TestOwnsHandlesTheOwnerOfEveryChangedChild(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, mode.opts)
			secrets := fakeapi.NewRetriever(&corev1.Secret{}, mode.opts)
			web, db := ownerCM("web", "uid-web"), ownerCM("db", "uid-db")
			mustAdd(t, cms, web)
			mustAdd(t, cms, db)
			webA := mustAdd(t, secrets, childOf("web-a", web)).(*corev1.Secret)
			mustAdd(t, secrets, childOf("db-a", db))

			rec := newMetrics()
			l := &ownerLog{children: controller.Owns[*corev1.Secret](secrets)}
			stop := start(t, controller.Config{Name: "owners", Handler: l, Retriever: cms, ResyncInterval: -1,
				MetricsRecorder: rec}, l.children)

			got := l.waitCalls(t, "both owners are handled", 2)
			slices.Sort(got)
			if want := []string{"db:db-a", "web:web-a"}; !slices.Equal(got, want) {
				t.Fatalf("got %q, want %q: each owner with its children", got, want)
			}

			mustAdd(t, secrets, childOf("web-b", web))
			if got := l.waitCalls(t, "a new child has its owner handled", 3)[2]; got != "web:web-a,web-b" {
				t.Errorf("got %q after a child was created, want web:web-a,web-b", got)
			}
			webA.Labels = map[string]string{"changed": "yes"}
			mustUpdate(t, secrets, webA)
			if got := l.waitCalls(t, "a changed child has its owner handled", 4)[3]; got != "web:web-a,web-b" {
				t.Errorf("got %q after a child changed, want web:web-a,web-b", got)
			}
			if err := secrets.Delete(webA); err != nil {
				t.Fatal(err)
			}
			if got := l.waitCalls(t, "a deleted child has its owner handled", 5)[4]; got != "web:web-b" {
				t.Errorf("got %q after a child was deleted, want web:web-b", got)
			}

			// A child of a web deleted and re-created (another UID), and
			// one of no owner at all: nothing to handle.
			mustAdd(t, secrets, childOf("stale", ownerCM("web", "uid-old-web")))
			mustAdd(t, secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan"}})
			settle()
			if got := l.Calls(); len(got) != 5 {
				t.Errorf("got handlings %q, want 5: a stale or missing owner is not queued", got)
			}
			if n := rec.get("queued " + "enqueue"); n != 3 {
				t.Errorf("got %d keys queued by the children, want 3", n)
			}
			if err := stop(); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

// Of reads an index of the cache: the children of one owner in key order,
// nothing before the cache has synced or after Run has returned; with
// Watches, the objects whose keys include the owner's.
func TestOfReturnsTheObjectsOfOneOwnerWhileRunRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	web, db := ownerCM("web", "uid-web"), ownerCM("db", "uid-db")
	mustAdd(t, cms, web)
	mustAdd(t, cms, db)
	for _, name := range []string{"web-c", "web-a", "web-b"} {
		mustAdd(t, secrets, childOf(name, web))
	}
	mustAdd(t, secrets, childOf("db-a", db))
	// Secrets name the ConfigMaps that read them in a label.
	readers := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	for name, by := range map[string]string{"tls": "web", "password": "db", "shared": "web.db"} {
		mustAdd(t, readers, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{"readers": by}}})
	}

	children := controller.Owns[*corev1.Secret](secrets)
	read := controller.Watches(readers, func(s *corev1.Secret) []string {
		var keys []string
		for _, name := range strings.Split(s.Labels["readers"], ".") {
			keys = append(keys, "ns/"+name)
		}
		return keys
	})
	if got := children.Of(web); got != nil {
		t.Errorf("got %d children before Run, want nil", len(got))
	}
	handled := make(chan string, 10)
	names := func(objs []*corev1.Secret) string {
		var out []string
		for _, o := range objs {
			out = append(out, o.Name)
		}
		return strings.Join(out, ",")
	}
	stop := start(t, controller.Config{Name: "owners", Retriever: cms,
		Handler: controller.HandlerFunc(func(_ context.Context, obj kruntime.Object) error {
			cm := obj.(*corev1.ConfigMap)
			handled <- fmt.Sprintf("%s owns [%s] reads [%s]", cm.Name, names(children.Of(cm)), names(read.Of(cm)))
			return nil
		})}, children, read)
	got := []string{<-handled, <-handled}
	slices.Sort(got)
	want := []string{"db owns [db-a] reads [password,shared]", "web owns [web-a,web-b,web-c] reads [shared,tls]"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := children.Of(ownerCM("web", "uid-other")); got != nil {
		t.Errorf("got %d children of an owner of another UID, want none", len(got))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := children.Of(web); got != nil {
		t.Errorf("got %d children after Run returned, want nil", len(got))
	}
	if got := read.Of(web); got != nil {
		t.Errorf("got %d watched objects after Run returned, want nil", len(got))
	}
}

// namedMetrics is a MetricsRecorder that records which controller every
// call names and where queued keys came from.
type namedMetrics struct {
	mu      sync.Mutex
	names   map[string]bool
	sources map[string]bool
}

func (m *namedMetrics) saw(name, source string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names == nil {
		m.names, m.sources = map[string]bool{}, map[string]bool{}
	}
	m.names[name] = true
	if source != "" {
		m.sources[source] = true
	}
}

func (m *namedMetrics) IncQueuedEvent(name, source string)            { m.saw(name, source) }
func (m *namedMetrics) ObserveQueueWait(name string, _ time.Duration) { m.saw(name, "") }
func (m *namedMetrics) ObserveHandling(name string, _ bool, _ time.Duration) {
	m.saw(name, "")
}
func (m *namedMetrics) IncRetry(name string)              { m.saw(name, "") }
func (m *namedMetrics) IncDropped(name, _ string)         { m.saw(name, "") }
func (m *namedMetrics) IncPanic(name string)              { m.saw(name, "") }
func (m *namedMetrics) AddQueueLength(name string, _ int) { m.saw(name, "") }
func (m *namedMetrics) IncRetrieveError(name, _ string)   { m.saw(name, "") }
func (m *namedMetrics) ObserveCacheWait(name string, _ bool, _ time.Duration) {
	m.saw(name, "")
}
func (m *namedMetrics) seen() (names, sources []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n := range m.names {
		names = append(names, n)
	}
	for s := range m.sources {
		sources = append(sources, s)
	}
	slices.Sort(names)
	slices.Sort(sources)
	return names, sources
}

// steadyGoroutines returns the number of goroutines once it stays the same
// for 100ms.
func steadyGoroutines(t *testing.T) int {
	t.Helper()
	last, same := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n != last {
			last, same = n, 0
			continue
		}
		if same++; same == 5 {
			return n
		}
	}
	t.Fatal("the number of goroutines never settled")
	return 0
}

// An owned kind adds a cache and its event handler only: no queue, no
// workers, no retries, no metrics series of its own. Every metric names
// the owner's controller, its keys are counted as enqueued, and each
// source adds the goroutines of one client-go informer, whatever
// ConcurrentWorkers.
func TestAnOwnedKindAddsACacheButNoQueueWorkersOrMetrics(t *testing.T) {
	defer goleak.VerifyNone(t)
	newSources := func(n int) ([]controller.Source, *fakeapi.Retriever) {
		secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
		var sources []controller.Source
		for range n {
			// No idle bound: its timer would be one more goroutine.
			sources = append(sources, controller.Owns[*corev1.Secret](controller.WithWatchIdleTimeout(secrets, -1)))
		}
		return sources, secrets
	}
	// running returns how many goroutines Run adds, after the sync, with n
	// sources.
	running := func(n int, rec *namedMetrics, change func(*fakeapi.Retriever)) int {
		cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
		web := ownerCM("web", "uid-web")
		mustAdd(t, cms, web)
		sources, secrets := newSources(n)
		mustAdd(t, secrets, childOf("web-a", web))
		handled := make(chan struct{}, 10)
		before := steadyGoroutines(t)
		c, err := controller.New(controller.Config{Name: "owners", Retriever: controller.WithWatchIdleTimeout(cms, -1),
			ConcurrentWorkers: 5, MetricsRecorder: rec,
			Handler: controller.HandlerFunc(func(context.Context, kruntime.Object) error {
				handled <- struct{}{}
				return nil
			})}, sources...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		<-handled
		if change != nil {
			change(secrets)
			<-handled
		}
		added := steadyGoroutines(t) - before
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return added
	}
	// informer returns how many goroutines one client-go informer with one
	// handler adds, over the same kind of retriever.
	informer := func() int {
		_, secrets := newSources(0)
		mustAdd(t, secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
		before := steadyGoroutines(t)
		inf := cache.NewSharedIndexInformer(secrets.ListerWatcher(), &corev1.Secret{}, 0, nil)
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			inf.RunWithContext(ctx)
		}()
		cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
		added := steadyGoroutines(t) - before
		cancel()
		<-done
		return added
	}

	rec := &namedMetrics{}
	withOne := running(1, rec, func(secrets *fakeapi.Retriever) {
		mustAdd(t, secrets, childOf("web-b", ownerCM("web", "uid-web")))
	})
	names, sources := rec.seen()
	if want := []string{"owners"}; !slices.Equal(names, want) {
		t.Errorf("got metrics of controllers %q, want %q only", names, want)
	}
	if want := []string{"enqueue", "initial"}; !slices.Equal(sources, want) {
		t.Errorf("got keys queued from %q, want %q", sources, want)
	}
	// The same recorder in each run: a named queue starts a goroutine of
	// its own for its metrics.
	without, withThree, perInformer := running(0, &namedMetrics{}, nil), running(3, &namedMetrics{}, nil), informer()
	if withOne-without != perInformer || withThree-without != 3*perInformer {
		t.Errorf("got %d goroutines without a source, %d with one, %d with three; want one informer's %d more per source",
			without, withOne, withThree, perInformer)
	}
}

// failing fails every list and watch until cured.
type failing struct {
	*fakeapi.Retriever
	cured atomic.Bool
}

func (f *failing) List(ctx context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
	if !f.cured.Load() {
		return nil, resource.ErrFormatWrong
	}
	return f.Retriever.List(ctx, opts)
}

func (f *failing) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if !f.cured.Load() {
		return nil, resource.ErrFormatWrong
	}
	return f.Retriever.Watch(ctx, opts)
}

// A controller has synced once every cache has, its sources' too: until
// then SyncError says which source fails, and nothing is handled.
func TestHasSyncedWaitsForEverySource(t *testing.T) {
	defer goleak.VerifyNone(t)
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	mustAdd(t, cms, ownerCM("web", "uid-web"))
	fine := controller.Owns[*corev1.Secret](fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{}))
	broken := &failing{Retriever: fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})}
	var handled atomic.Int32
	c, err := controller.New(controller.Config{Name: "owners", Retriever: cms,
		Handler: controller.HandlerFunc(func(context.Context, kruntime.Object) error {
			handled.Add(1)
			return nil
		})}, fine, controller.Owns[*corev1.Secret](broken))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	eventually(t, "SyncError says why", func() bool { return c.SyncError() != nil })
	err = c.SyncError()
	if !errors.Is(err, controller.ErrDecode) || !strings.Contains(err.Error(), "owners: could not decode the retrieved objects of *v1.Secret") {
		t.Errorf("got SyncError %q, want ErrDecode naming the controller and the source's type", err)
	}
	settle()
	if c.HasSynced() {
		t.Error("got synced while a source has not, want not")
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("got %d handlings before a source synced, want none", n)
	}

	broken.cured.Store(true)
	eventually(t, "the controller syncs once the source does", c.HasSynced)
	eventually(t, "the owner is handled", func() bool { return handled.Load() == 1 })
	if err := c.SyncError(); err != nil {
		t.Errorf("got SyncError %v once synced, want nil", err)
	}
}

// One owner is never handled by two workers at once, whichever kind
// changed: bursts of changes to owners and to their children, from
// several goroutines, end in the one queue. Run it with -race.
func TestAnOwnerIsNeverHandledByTwoWorkersAcrossKinds(t *testing.T) {
	defer goleak.VerifyNone(t)
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	const owners, childrenEach = 4, 3
	var all []*corev1.ConfigMap
	var kids []*corev1.Secret
	for i := range owners {
		o := ownerCM(fmt.Sprintf("o%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
		all = append(all, mustAdd(t, cms, o).(*corev1.ConfigMap))
		for j := range childrenEach {
			kids = append(kids, mustAdd(t, secrets, childOf(fmt.Sprintf("o%d-%d", i, j), o)).(*corev1.Secret))
		}
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		overlaps []string
		handled  atomic.Int64
	)
	children := controller.Owns[*corev1.Secret](secrets)
	stop := start(t, controller.Config{Name: "owners", Retriever: cms,
		ConcurrentWorkers: 4, ResyncInterval: -1,
		Handler: controller.HandlerFunc(func(_ context.Context, obj kruntime.Object) error {
			cm := obj.(*corev1.ConfigMap)
			mu.Lock()
			if inFlight[cm.Name] {
				overlaps = append(overlaps, cm.Name)
			}
			inFlight[cm.Name] = true
			mu.Unlock()
			_ = children.Of(cm)
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			mu.Lock()
			inFlight[cm.Name] = false
			mu.Unlock()
			handled.Add(1)
			return nil
		})}, children)
	eventually(t, "every owner is handled", func() bool { return handled.Load() >= owners })

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for n := range 50 {
				if g%2 == 0 {
					s := kids[rand.IntN(len(kids))].DeepCopy()
					s.Labels = map[string]string{"n": fmt.Sprint(g, n)}
					mustUpdate(t, secrets, s)
				} else {
					o := all[rand.IntN(len(all))].DeepCopy()
					o.Labels = map[string]string{"n": fmt.Sprint(g, n)}
					mustUpdate(t, cms, o)
				}
			}
		})
	}
	wg.Wait()
	settle()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(overlaps) > 0 {
		t.Errorf("got owners handled by two workers at once: %q", overlaps)
	}
	if n := handled.Load(); n <= owners {
		t.Errorf("got %d handlings, want the bursts to have some handled again", n)
	}
}

// A warm standby keeps its sources' caches filled, and their changes queue
// nothing until it leads; then they queue their owners.
func TestRunWarmFillsTheSourcesButQueuesNothingUntilLeading(t *testing.T) {
	defer goleak.VerifyNone(t)
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	web := ownerCM("web", "uid-web")
	mustAdd(t, cms, web)
	l := &ownerLog{children: controller.Owns[*corev1.Secret](secrets)}
	rec := newMetrics()
	c, err := controller.New(controller.Config{Name: "owners", Handler: l, Retriever: cms, MetricsRecorder: rec},
		l.children)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	leading := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- c.RunWarm(ctx, leading) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunWarm: %v", err)
		}
	}()

	eventually(t, "the standby syncs", c.HasSynced)
	mustAdd(t, secrets, childOf("web-a", web))
	eventually(t, "the source's cache has the new child", func() bool { return len(l.children.Of(web)) == 1 })
	settle()
	if n := rec.get("queue length"); n != 0 || len(l.Calls()) != 0 {
		t.Errorf("got %d keys queued and %q handled while standing by, want none", n, l.Calls())
	}
	close(leading)
	if got := l.waitCalls(t, "the owner is handled once leading", 1); got[0] != "web:web-a" {
		t.Errorf("got %q, want web:web-a", got)
	}
	mustAdd(t, secrets, childOf("web-b", web))
	if got := l.waitCalls(t, "a new child has its owner handled", 2); got[1] != "web:web-a,web-b" {
		t.Errorf("got %q, want web:web-a,web-b", got[1])
	}
}

// New refuses a source it cannot run.
func TestNewRefusesASourceItCannotRun(t *testing.T) {
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	taken := controller.Owns[*corev1.Secret](secrets)
	if _, err := controller.New(controller.Config{Name: "first", Handler: &ownerLog{}, Retriever: cms}, taken); err != nil {
		t.Fatal(err)
	}
	twice := controller.Owns[*corev1.Secret](secrets)
	tests := []struct {
		name    string
		sources []controller.Source
	}{
		{"A nil source", []controller.Source{nil}},
		{"A nil *Watched", []controller.Source{(*controller.Watched[*corev1.Secret])(nil)}},
		{"Owns without a retriever", []controller.Source{controller.Owns[*corev1.Secret](nil)}},
		{"Watches without a retriever", []controller.Source{controller.Watches(nil, func(*corev1.Secret) []string { return nil })}},
		{"Watches without a keys function", []controller.Source{controller.Watches[*corev1.Secret](secrets, nil)}},
		{"A source another controller has", []controller.Source{taken}},
		{"A source given twice", []controller.Source{twice, twice}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := controller.New(controller.Config{Name: "owners", Handler: &ownerLog{}, Retriever: cms}, tc.sources...)
			if !errors.Is(err, controller.ErrInvalidConfig) {
				t.Errorf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
	// A refused New leaves its sources free for another controller.
	if _, err := controller.New(controller.Config{Name: "owners", Handler: &ownerLog{}, Retriever: cms}, twice); err != nil {
		t.Errorf("got %v giving a source refused with another to a new controller, want nil", err)
	}
}

// RunAll runs controllers together: a clean stop returns nil once every one
// has returned; the first error stops the others and is returned.
func TestRunAll(t *testing.T) {
	newController := func(t *testing.T, name string) (*controller.Controller, *recorder) {
		t.Helper()
		src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
		mustAdd(t, src, pod(name))
		h := &recorder{}
		c, err := controller.New(controller.Config{Name: name, Handler: h, Retriever: src})
		if err != nil {
			t.Fatal(err)
		}
		return c, h
	}
	tests := []struct {
		name string
		// controllers returns what to run, and what must have handled its
		// object before ctx is cancelled (nil: RunAll returns by itself).
		controllers func(t *testing.T) (cs []*controller.Controller, handlers []*recorder)
		want        error
	}{
		{"A clean stop returns nil once every controller has returned", func(t *testing.T) ([]*controller.Controller, []*recorder) {
			a, ha := newController(t, "a")
			b, hb := newController(t, "b")
			return []*controller.Controller{a, b}, []*recorder{ha, hb}
		}, nil},
		{"An error of one stops the others and is returned", func(t *testing.T) ([]*controller.Controller, []*recorder) {
			a, _ := newController(t, "a")
			b, _ := newController(t, "b")
			return []*controller.Controller{a, b, a}, nil // a runs once: ErrAlreadyRun
		}, controller.ErrAlreadyRun},
		{"A nil controller is refused before any starts", func(t *testing.T) ([]*controller.Controller, []*recorder) {
			a, _ := newController(t, "a")
			return []*controller.Controller{a, nil}, nil
		}, controller.ErrInvalidConfig},
		{"No controller returns at once", func(*testing.T) ([]*controller.Controller, []*recorder) { return nil, nil }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			cs, handlers := tc.controllers(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- controller.RunAll(ctx, cs...) }()
			if handlers != nil {
				for i, h := range handlers {
					eventually(t, fmt.Sprintf("controller %d handles its object", i), func() bool { return len(h.Calls()) == 1 })
				}
				cancel()
			}
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Errorf("got %v, want %v", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("RunAll did not return")
			}
			if errors.Is(tc.want, controller.ErrInvalidConfig) {
				stopped, cancel := context.WithCancel(context.Background())
				cancel()
				if err := cs[0].Run(stopped); err != nil {
					t.Errorf("got %v running the other controller, want nil: RunAll started none", err)
				}
			}
		})
	}
}
