package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/hack/envtest/procnode"
	"github.com/kooperkit/kooper/hack/migrate/storage"
)

// oldRelease is the last commit whose pod-terminator serves PodTerminator
// v1alpha1 alone, before apis/chaos/v1beta1 came (issue 38): the release
// the upgrade starts from.
const oldRelease = "7ef9155715cfab6a32263a786176301b1132c584"

// TestAnUpgradeLosesNothing upgrades the pod-terminator from oldRelease to
// this tree, as docs/deploy.md says, under procnode: two replicas of the
// old image run, a writer creates and changes PodTerminators through every
// version served, and make upgrade's deploy.sh applies the new release
// (everything but the CRD, the rollout, then the CRD with its conversion's
// CA bundle), then the stored objects are migrated. No call may be
// refused, no object lost, no PodTerminator written by a replica that was
// not the last to write the Lease, and every object's last generation is
// handled. A Deployment whose update stops both replicas at once must be
// caught refusing calls. It builds the old release from this repository's
// history: make test-upgrade runs it, and CI after make test.
func TestAnUpgradeLosesNothing(t *testing.T) {
	const op = "pod-terminator"
	old := checkout(t, oldRelease)
	dir := t.TempDir()
	oldRef, newRef := "kooper.test/"+op+":old", "kooper.test/"+op+":new"
	images := map[string]procnode.Image{
		oldRef: {Tarball: buildImage(t, old, filepath.Join(dir, "old"), op, oldRef)},
		newRef: {Tarball: buildImage(t, root, filepath.Join(dir, "new"), op, newRef)},
	}
	run := func(t *testing.T, breakIt func(p *podsTest)) writes {
		p := startPodsCluster(t, t.TempDir(), images, map[string]string{op: newRef})
		return upgrade(t, p, op, filepath.Join(old, "manifests", "deploy.sh"), oldRef, newRef, breakIt)
	}
	t.Run("rolling, as make upgrade applies it", func(t *testing.T) {
		w := run(t, nil)
		t.Logf("writes: %s; overlaps: %d", w, len(w.overlaps))
		if w.refused > 0 {
			t.Errorf("%d calls refused: %v", w.refused, w.refusals)
		}
		for _, o := range w.overlaps {
			t.Errorf("overlap: %s", o)
		}
	})
	t.Run("broken: a Deployment that stops both replicas at once", func(t *testing.T) {
		w := run(t, func(p *podsTest) {
			// The rendered Deployment names no strategy: the live one's stays.
			_, err := p.kube.AppsV1().Deployments(namespaceOf(op)).Patch(context.Background(), op, "application/merge-patch+json",
				[]byte(`{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("writes: %s", w)
		if w.refused == 0 {
			t.Fatalf("not caught: no call refused while both replicas were replaced at once")
		}
		t.Logf("caught: %d calls refused, the first: %v", w.refused, w.refusals)
	})
}

// upgrade deploys the old release with oldScript and image oldRef, writes
// through it, upgrades to newRef with this tree's deploy.sh (breakIt, if
// set, changes the cluster first), migrates, and checks that nothing was
// lost and every last generation handled. It returns what the writer did
// and the writes by a replica without the Lease.
func upgrade(t *testing.T, p *podsTest, op, oldScript, oldRef, newRef string, breakIt func(p *podsTest)) writes {
	t.Helper()
	ctx := context.Background()
	// The old release, as its make deploy applied it.
	oldObjs := objects(t, renderWith(t, oldScript, op, oldRef))
	d := &deployed{op: op, objs: oldObjs, logsFrom: len(p.node.ContainerLogs()), since: time.Now()}
	eventually(t, 30*time.Second, "kubectl apply of the old release", func() error { return p.apply(stream(t, oldObjs)) })
	if _, err := p.waitReady(ctx, d, 2, 3*time.Minute); err != nil {
		t.Fatalf("the old release: %v", err)
	}
	if breakIt != nil {
		breakIt(p)
	}

	quiet := p.cluster.Config()
	quiet.WarningHandler = rest.NoWarnings{} // v1alpha1's deprecation, on every write
	w := startWriter(t, dynamic.NewForConfigOrDie(quiet))
	time.Sleep(10 * time.Second)

	// make upgrade: everything but the CRD, the rollout (the new replicas
	// serve admission and conversion), then the CRD with both versions,
	// v1beta1 stored, with the CA bundle the webhook configuration holds.
	began := time.Now()
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "upgrade", "OPERATOR="+op, "IMG="+newRef, "KUBECTL="+kubectlPath(t))
	// The current context is the test cluster's, whatever the caller's
	// environment says.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.cluster.KubeconfigPath(), "UPGRADE_TIMEOUT=3m")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make upgrade: %v\n%s", err, out)
	}
	t.Logf("make upgrade took %s", time.Since(began).Round(100*time.Millisecond))
	waitRolledOut(t, p, op, newRef, 30*time.Second)
	betaGVR := chaosv1beta1.SchemeGroupVersion.WithResource("podterminators")
	eventually(t, 30*time.Second, "v1beta1 is served", func() error {
		_, err := dynamic.NewForConfigOrDie(p.cluster.Config()).Resource(betaGVR).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	w.serve(betaGVR)
	time.Sleep(10 * time.Second)

	// Then what is stored is migrated to v1beta1.
	report, err := storage.Migrate(ctx, p.cluster.Config(), "podterminators."+chaosv1beta1.GroupName, storage.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Logf("%s", report)
	time.Sleep(5 * time.Second)
	counts := w.stop()

	// Every object is there, and its last generation handled.
	beta := dynamic.NewForConfigOrDie(p.cluster.Config()).Resource(betaGVR)
	eventually(t, 2*time.Minute, "every PodTerminator's last generation is handled", func() error {
		list, err := beta.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		have := map[string]bool{}
		var behind []string
		for _, o := range list.Items {
			have[o.GetName()] = true
			observed, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			if observed != o.GetGeneration() {
				behind = append(behind, fmt.Sprintf("%s (%d of %d)", o.GetName(), observed, o.GetGeneration()))
			}
		}
		var lost []string
		for _, name := range counts.names {
			if !have[name] {
				lost = append(lost, name)
			}
		}
		if len(lost) > 0 {
			t.Fatalf("%d of %d PodTerminators lost: %v", len(lost), len(counts.names), lost)
		}
		if len(behind) > 0 {
			return fmt.Errorf("not handled: %v", behind)
		}
		return nil
	})
	counts.overlaps = writesWithoutTheLease(t, p.audit, namespaceOf(op), op)
	return counts
}

// checkout writes the tree of commit into a temporary directory (git
// archive: nothing of this repository changes).
func checkout(t *testing.T, commit string) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	extract := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	extract.Stdin = pipe
	var errs strings.Builder
	archive.Stderr = &errs
	if err := extract.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s\nthe upgrade test builds the old release from this repository's history (make test-upgrade); a clone without it cannot run it", commit, err, errs.String())
	}
	if err := extract.Wait(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	return dir
}

// waitRolledOut waits until op's Deployment runs image in all its replicas,
// each Ready, and no pod of another image is left.
func waitRolledOut(t *testing.T, p *podsTest, op, image string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	began := time.Now()
	eventually(t, timeout, op+" rolled out to "+image, func() error {
		dep, err := p.kube.AppsV1().Deployments(namespaceOf(op)).Get(ctx, op, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods, err := p.kube.CoreV1().Pods(namespaceOf(op)).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + op})
		if err != nil {
			return err
		}
		var states []string
		done := 0
		for _, pod := range pods.Items {
			img := pod.Spec.Containers[0].Image
			states = append(states, fmt.Sprintf("%s %s ready=%t deleting=%t", pod.Name, img, podIsReady(&pod), pod.DeletionTimestamp != nil))
			if img == image && podIsReady(&pod) && pod.DeletionTimestamp == nil {
				done++
			}
		}
		if want := replicas(dep); done != want || len(pods.Items) != want {
			return fmt.Errorf("%d of %d replicas of %s Ready: %v", done, want, image, states)
		}
		return nil
	})
	t.Logf("rolled out in %s", time.Since(began).Round(100*time.Millisecond))
}

func replicas(d *appsv1.Deployment) int {
	if d.Spec.Replicas == nil {
		return 1
	}
	return int(*d.Spec.Replicas)
}

// writer creates and changes PodTerminators through every version served
// until stopped, and counts what the API server refused.
type writer struct {
	mu       sync.Mutex
	versions []schema.GroupVersionResource
	counts   writes
	cancel   context.CancelFunc
	done     chan struct{}
}

// writes is what a writer did.
type writes struct {
	created, changed, conflicts, refused int
	byVersion                            map[string]int
	refusals                             []string
	names                                []string
	// overlaps are the PodTerminator writes, in the audit log, of a
	// replica that was not the last to write the Lease.
	overlaps []string
}

func (w writes) String() string {
	return fmt.Sprintf("%d created, %d changed (by version %v), %d conflicts retried, %d refused", w.created, w.changed, w.byVersion, w.conflicts, w.refused)
}

func startWriter(t *testing.T, dyn dynamic.Interface) *writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{
		versions: []schema.GroupVersionResource{chaosv1alpha1.SchemeGroupVersion.WithResource("podterminators")},
		counts:   writes{byVersion: map[string]int{}},
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; i++ {
			w.mu.Lock()
			gvr := w.versions[i%len(w.versions)]
			names := slices.Clone(w.counts.names)
			w.mu.Unlock()
			r := dyn.Resource(gvr)
			var err error
			created := false
			if len(names) < 40 && i%3 == 0 {
				name := fmt.Sprintf("upgrade-%03d", len(names))
				_, err = r.Create(ctx, newPodTerminator(gvr.Version, name, 1+i%50), metav1.CreateOptions{})
				if err == nil {
					w.mu.Lock()
					w.counts.names = append(w.counts.names, name)
					w.mu.Unlock()
				}
				created = true
			} else if len(names) > 0 {
				name := names[rand.IntN(len(names))]
				path := []string{"spec", "terminationPercent"}
				if gvr.Version == "v1beta1" {
					path = []string{"spec", "termination", "percent"}
				}
				patch := map[string]any{}
				leaf := patch
				for _, k := range path[:len(path)-1] {
					m := map[string]any{}
					leaf[k] = m
					leaf = m
				}
				leaf[path[len(path)-1]] = 1 + i%50
				b, _ := json.Marshal(patch)
				_, err = r.Patch(ctx, name, "application/merge-patch+json", b, metav1.PatchOptions{})
			}
			w.mu.Lock()
			switch {
			case err == nil && created:
				w.counts.created++
				w.counts.byVersion[gvr.Version]++
			case err == nil:
				w.counts.changed++
				w.counts.byVersion[gvr.Version]++
			case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
				w.counts.conflicts++
			case ctx.Err() != nil:
			default:
				w.counts.refused++
				if len(w.counts.refusals) < 5 {
					w.counts.refusals = append(w.counts.refusals, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), gvr.Version, err))
				}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// serve makes the writer write through gvr too, from now on.
func (w *writer) serve(gvr schema.GroupVersionResource) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.versions = append(w.versions, gvr)
}

// stop stops the writer and returns what it did.
func (w *writer) stop() writes {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts
}

// newPodTerminator is a dry-run PodTerminator of version, selecting no pod.
func newPodTerminator(version, name string, percent int) *unstructured.Unstructured {
	spec := map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "nothing-" + name}},
		"dryRun":   true,
	}
	if version == "v1beta1" {
		spec["termination"] = map[string]any{"percent": int64(percent)}
		spec["period"] = "1m"
	} else {
		spec["terminationPercent"] = int64(percent)
		spec["periodSeconds"] = int64(60)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": chaosv1beta1.GroupName + "/" + version,
		"kind":       "PodTerminator",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

// writesWithoutTheLease reads the audit log: every PodTerminator write by
// the operator's ServiceAccount whose pod was not the last to write the
// operator's Lease before it.
func writesWithoutTheLease(t *testing.T, audit, namespace, sa string) []string {
	t.Helper()
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	user := "system:serviceaccount:" + namespace + ":" + sa
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	holder := ""
	var found []string
	writes := 0
	for s.Scan() {
		var ev struct {
			Stage string
			User  struct {
				Username string
				Extra    map[string][]string
			}
			Verb      string
			ObjectRef struct {
				Resource, Name, Subresource string
			}
			ResponseStatus           struct{ Code int }
			RequestReceivedTimestamp time.Time
		}
		if json.Unmarshal(s.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" || ev.User.Username != user || ev.ResponseStatus.Code >= 300 {
			continue
		}
		pod := strings.Join(ev.User.Extra["authentication.kubernetes.io/pod-name"], ",")
		switch {
		case ev.ObjectRef.Resource == "leases" && (ev.Verb == "update" || ev.Verb == "create" || ev.Verb == "patch"):
			holder = pod
		case ev.ObjectRef.Resource == "podterminators" && ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch":
			writes++
			if pod != holder {
				found = append(found, fmt.Sprintf("%s %s %s/%s by %s while %q held the Lease", ev.RequestReceivedTimestamp.Format("15:04:05.000"), ev.Verb, ev.ObjectRef.Name, ev.ObjectRef.Subresource, pod, holder))
			}
		}
	}
	t.Logf("the operator's writes of PodTerminators in the audit log: %d", writes)
	return found
}

// The overlap check finds a PodTerminator written by a replica that was
// not the last to write the Lease, and only that.
func TestTheOverlapCheckFindsAWriteWithoutTheLease(t *testing.T) {
	const ns, sa = "kooper-pod-terminator", "pod-terminator"
	line := func(pod, verb, resource, name string, code int) string {
		return fmt.Sprintf(`{"stage":"ResponseComplete","user":{"username":"system:serviceaccount:%s:%s","extra":{"authentication.kubernetes.io/pod-name":[%q]}},"verb":%q,"objectRef":{"resource":%q,"name":%q},"responseStatus":{"code":%d},"requestReceivedTimestamp":"2026-11-27T10:00:00Z"}`,
			ns, sa, pod, verb, resource, name, code)
	}
	audit := filepath.Join(t.TempDir(), "audit.log")
	log := strings.Join([]string{
		line("a", "update", "leases", "pod-terminator", 200),
		line("a", "patch", "podterminators", "one", 200),     // a leads: fine
		line("b", "update", "leases", "pod-terminator", 409), // b's failed try changes nothing
		line("b", "update", "podterminators", "two", 200),    // b writes without the Lease
		line("b", "update", "leases", "pod-terminator", 200),
		line("b", "update", "podterminators", "three", 200), // b leads now: fine
		line("a", "get", "podterminators", "three", 200),    // a read: fine
	}, "\n") + "\n"
	if err := os.WriteFile(audit, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got := writesWithoutTheLease(t, audit, ns, sa)
	if len(got) != 1 || !strings.Contains(got[0], "update two/ by b while \"a\" held the Lease") {
		t.Errorf("got %q, want the one write of two by b", got)
	}
}
