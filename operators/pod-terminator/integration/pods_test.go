package integration_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/kube"
)

// A pod deleted and re-created under the same name since it was listed is
// neither evicted nor deleted: the UID precondition protects it (fakes
// ignore preconditions).
func TestAReplacedPodIsNotDeleted(t *testing.T) {
	for _, m := range []chaos.Method{chaos.Evict, chaos.Delete} {
		t.Run(map[chaos.Method]string{chaos.Evict: "evict", chaos.Delete: "delete"}[m], func(t *testing.T) {
			testReplacedPod(t, m)
		})
	}
}

func testReplacedPod(t *testing.T, method chaos.Method) {
	// region: replaced-pod
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pt-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteNamespaceAtEnd(t, client, ns.Name)
	// No scheduler and no node take these pods, so nothing but this test
	// acts on them. With the default scheduler, its status patch of the
	// first pod (PodScheduled=False), sent before the first pod's deletion
	// and stored after the second pod's creation, deleted the second pod
	// about once in 120 runs: the API server applied the patch to its
	// cached copy of the first pod, whose grace period of 0 has an update
	// delete the object at that name (the audit log showed no other
	// request). That is the API server's race, not the operator's.
	newPod := func() *corev1.Pod {
		p, err := client.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "victim"},
			Spec: corev1.PodSpec{
				SchedulerName: "kooper-no-scheduler",
				NodeSelector:  map[string]string{"no-such-label": "x"},
				Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := newPod()
	// A grace period of 0 deletes a pod at once.
	if err := client.CoreV1().Pods(ns.Name).Delete(ctx, "victim", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	second := newPod()
	lastState := watchDeletion(t, client, ns.Name, second.ResourceVersion) // says who, should it go
	pods := kube.Pods{Client: client}
	err = pods.DeletePod(ctx, chaos.Pod{Namespace: ns.Name, Name: "victim", UID: string(first.UID)}, method)
	if !errors.Is(err, chaos.ErrPodGone) {
		t.Errorf("got %v deleting by the old UID, want ErrPodGone", err)
	}
	got, err := client.CoreV1().Pods(ns.Name).Get(ctx, "victim", metav1.GetOptions{})
	if err != nil || got.UID != second.UID {
		t.Fatalf("got pod %v (err %v), want the re-created pod kept; %s", got.UID, err, lastState())
	}
	if err := pods.DeletePod(ctx, chaos.Pod{Namespace: ns.Name, Name: "victim", UID: string(second.UID)}, method); err != nil {
		t.Errorf("got %v deleting by the current UID, want nil", err)
	}
	// endregion: replaced-pod
}

// watchDeletion watches the pods of ns from resourceVersion rv and returns
// a function that reports the last state of the first pod deleted within 2
// seconds: an eviction leaves a DisruptionTarget condition, and
// managedFields name the writers.
func watchDeletion(t *testing.T, client kubernetes.Interface, ns, rv string) func() string {
	t.Helper()
	w, err := client.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return func() string {
		timeout := time.After(2 * time.Second)
		for {
			select {
			case ev, open := <-w.ResultChan():
				if !open {
					return "the watch closed before a deletion"
				}
				if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Deleted {
					return fmt.Sprintf("deleted at %v: conditions %+v, managedFields %+v", p.DeletionTimestamp, p.Status.Conditions, p.ManagedFields)
				}
			case <-timeout:
				return "no deletion seen"
			}
		}
	}
}
