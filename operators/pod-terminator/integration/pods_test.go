package integration_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/devcluster"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/kube"
)

// A pod deleted and re-created under the same name since it was listed is
// neither evicted nor deleted: the UID precondition protects it (fakes
// ignore preconditions).
func TestAReplacedPodIsNotDeleted(t *testing.T) {
	if cluster == nil {
		t.Skip(devcluster.SkipHint)
	}
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
	// No node matches these pods, so nothing but this test acts on them (a
	// node agent finishing the first pod's deletion by name could delete
	// the second).
	newPod := func() *corev1.Pod {
		p, err := client.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "victim"},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"no-such-label": "x"},
				Containers:   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
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

	pods := kube.Pods{Client: client}
	err = pods.DeletePod(ctx, chaos.Pod{Namespace: ns.Name, Name: "victim", UID: string(first.UID)}, method)
	if !errors.Is(err, chaos.ErrPodGone) {
		t.Errorf("got %v deleting by the old UID, want ErrPodGone", err)
	}
	got, err := client.CoreV1().Pods(ns.Name).Get(ctx, "victim", metav1.GetOptions{})
	if err != nil || got.UID != second.UID {
		t.Fatalf("got pod %v (err %v), want the re-created pod kept", got.UID, err)
	}
	if err := pods.DeletePod(ctx, chaos.Pod{Namespace: ns.Name, Name: "victim", UID: string(second.UID)}, method); err != nil {
		t.Errorf("got %v deleting by the current UID, want nil", err)
	}
	// endregion: replaced-pod
}
