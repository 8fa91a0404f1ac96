package integration_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kooperkit/kooper/kooper/controller"
)

// deployment returns a Deployment named name, its annotations saying what
// the handler does.
func deployment(name string, annotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
			},
		},
	}
}

// Each reason a handling can have on a real API server, driven once: the
// handler reads why it runs with controller.Reasons. Deployments have
// generations (their spec), Secrets are their children.
func TestTheHandlerKnowsWhyItRunsOnAnAPIServer(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	deploys := client.AppsV1().Deployments(ns)
	if _, err := deploys.Create(ctx, deployment("listed", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var (
		mu                    sync.Mutex
		seen                  []string
		failOnce, requeueOnce sync.Once
	)
	saw := func(want string) {
		t.Helper()
		eventually(t, 30*time.Second, "a handling of "+want, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(seen, want)
		})
	}
	h := func(ctx context.Context, d *appsv1.Deployment) error {
		var rs []string
		for _, r := range controller.Reasons(ctx) {
			rs = append(rs, r.String())
		}
		mu.Lock()
		seen = append(seen, d.Name+": "+strings.Join(rs, ", "))
		mu.Unlock()
		var err error
		switch d.Annotations["do"] {
		case "fail":
			failOnce.Do(func() { err = errors.New("boom") })
		case "requeue":
			requeueOnce.Do(func() { err = controller.RequeueAfter(10 * time.Millisecond) })
		}
		return err
	}
	secrets := client.CoreV1().Secrets(ns)
	c, err := controller.New(controller.Config{
		Name:           "why",
		Handler:        controller.Typed(h),
		Retriever:      controller.NewRetriever(deploys.List, deploys.Watch),
		ResyncInterval: -1,
		RetryBaseDelay: 10 * time.Millisecond,
	}, controller.Owns[*corev1.Secret](controller.NewRetriever(secrets.List, secrets.Watch)))
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runInBackground(t, c.Run)

	saw("listed: initial")
	created, err := deploys.Create(ctx, deployment("created", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saw("created: created")
	if _, err := deploys.Patch(ctx, "created", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	saw("created: generation")
	if _, err := deploys.Patch(ctx, "listed", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	saw("listed: changed")

	yes := true
	child := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "Deployment", Name: created.Name, UID: created.UID, Controller: &yes}}}}
	if _, err := secrets.Create(ctx, child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owned := "created: owned (Secret " + ns + "/child)"
	saw(owned)

	if _, err := deploys.Create(ctx, deployment("failing", map[string]string{"do": "fail"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saw("failing: retry (boom)")
	if _, err := deploys.Create(ctx, deployment("requeued", map[string]string{"do": "requeue"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saw("requeued: requeue (10ms)")
	c.Enqueue(ns + "/listed")
	saw("listed: enqueued (integration_test.TestTheHandlerKnowsWhyItRunsOnAnAPIServer)")

	// A child's deletion is a reason too.
	mu.Lock()
	before := count(seen, owned)
	mu.Unlock()
	if err := secrets.Delete(ctx, "child", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the child's deletion queues its owner", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return count(seen, owned) > before
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("handlings and their reasons: %q", seen)
}

// count returns how many of lines are line.
func count(lines []string, line string) int {
	n := 0
	for _, l := range lines {
		if l == line {
			n++
		}
	}
	return n
}
