package integration_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/controller"
)

// childrenAnnotation is where the owners' handler writes how many children
// Of returned.
const childrenAnnotation = "kooper.test/children"

// owners retrieves the ConfigMaps of ns labelled role=owner.
func owners(client kubernetes.Interface, ns string) controller.Retriever {
	cms := client.CoreV1().ConfigMaps(ns)
	selected := func(opts *metav1.ListOptions) { opts.LabelSelector = "role=owner" }
	return controller.NewRetriever(
		func(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
			selected(&opts)
			return cms.List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			selected(&opts)
			return cms.Watch(ctx, opts)
		})
}

// ownerHandlings is the owners' handler's record: handlings per owner, and
// owners handled by two workers at once.
type ownerHandlings struct {
	mu       sync.Mutex
	count    map[string]int
	inFlight map[string]bool
	overlaps []string
}

func (h *ownerHandlings) begin(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight[name] {
		h.overlaps = append(h.overlaps, name)
	}
	h.inFlight[name] = true
	h.count[name]++
}

func (h *ownerHandlings) end(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inFlight[name] = false
}

func (h *ownerHandlings) of(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count[name]
}

// ConfigMaps labelled role=owner own Secrets through controller references.
// One controller with 3 workers handles the owners; the Secrets are an
// owned kind (controller.Owns) of it, not a controller. Creating, changing
// and deleting a child has its owner handled, whose handler writes into the
// owner how many children Of returns; a burst of changes to owners and
// children never has one owner handled by two workers at once.
func TestOwnedChildrenHaveTheirOwnerHandled(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	cms, secrets := client.CoreV1().ConfigMaps(ns), client.CoreV1().Secrets(ns)

	rec := &ownerHandlings{count: map[string]int{}, inFlight: map[string]bool{}}
	children := controller.Owns[*corev1.Secret](controller.NewRetriever(secrets.List, secrets.Watch))
	ctrl, err := controller.New(controller.Config{
		Name: "owners", Retriever: owners(client, ns),
		ConcurrentWorkers: 3, ResyncInterval: -1,
		Handler: controller.Typed(
			func(ctx context.Context, cm *corev1.ConfigMap) error {
				rec.begin(cm.Name)
				defer rec.end(cm.Name)
				n := strconv.Itoa(len(children.Of(cm)))
				if cm.Annotations[childrenAnnotation] == n {
					return nil
				}
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, childrenAnnotation, n)
				_, err := cms.Patch(ctx, cm.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				return err
			}),
	}, children)
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runInBackground(t, ctrl.Run)

	owner := func(name string) *corev1.ConfigMap {
		created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"role": "owner"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	child := func(name string, of *corev1.ConfigMap) (*corev1.Secret, error) {
		ref := metav1.NewControllerRef(of, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		return secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{*ref}}, StringData: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	}
	annotated := func(name, want string) func() bool {
		return func() bool {
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			return err == nil && cm.Annotations[childrenAnnotation] == want
		}
	}
	web, db := owner("web"), owner("db")
	eventually(t, 30*time.Second, "the owners say they have no child", func() bool {
		return annotated("web", "0")() && annotated("db", "0")()
	})
	eventually(t, 30*time.Second, "the controller has synced", ctrl.HasSynced)
	// Each owner is handled when created, and again for the handler's own
	// patch (which then finds nothing to write): nothing more to come.
	eventually(t, 30*time.Second, "the owners' patches are handled", func() bool {
		return rec.of("web") >= 2 && rec.of("db") >= 2
	})

	dbHandlings := rec.of("db")
	webA, err := child("web-a", web)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a created child is counted in its owner", annotated("web", "1"))

	handled := rec.of("web")
	webA.StringData = map[string]string{"v": "1"}
	if _, err := secrets.Update(ctx, webA, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a changed child has its owner handled", func() bool { return rec.of("web") > handled })

	if err := secrets.Delete(ctx, "web-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a deleted child is no longer counted in its owner", annotated("web", "0"))
	if n := rec.of("db"); n != dbHandlings {
		t.Errorf("got db handled %d more times while only web's child changed, want none", n-dbHandlings)
	}

	// A burst: children of both owners created and changed, and the
	// owners changed, from several goroutines at once.
	const each = 8
	var wg sync.WaitGroup
	for _, of := range []*corev1.ConfigMap{web, db} {
		for i := range each {
			wg.Go(func() {
				s, err := child(fmt.Sprintf("%s-%d", of.Name, i), of)
				if err != nil {
					t.Error(err)
					return
				}
				for v := range 3 {
					s.StringData = map[string]string{"v": strconv.Itoa(v + 1)}
					updated, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					s = updated
				}
			})
		}
		wg.Go(func() {
			for v := range 5 {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"burst":"%d"}}}`, v)
				if _, err := cms.Patch(ctx, of.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := strconv.Itoa(each)
	eventually(t, 30*time.Second, "every child of the burst is counted", func() bool {
		return annotated("web", want)() && annotated("db", want)()
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.overlaps) > 0 {
		t.Errorf("got owners handled by two workers at once: %q", rec.overlaps)
	}
	t.Logf("handlings: web %d, db %d", rec.count["web"], rec.count["db"])
	if got := children.Of(web); got != nil {
		t.Errorf("got %d children after Run returned, want nil", len(got))
	}
}
