package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/hack/envtest"
)

// make deploy installs each operator with its image, and everything it
// renders, inside its namespace and out; make undeploy removes one
// operator, its custom resources first, while its Deployment still runs to
// remove their finalizers, then everything it rendered, its own namespace
// included, then its CRDs, and leaves the other operators alone;
// undeploying again is harmless.
//
// It runs on a cluster of its own, with the controller manager: ReplicaSets
// make the pods (so Pod Security admission checks real pods), and the
// namespace controller deletes namespaces. No node runs the pods, so the
// test plays the operator's part: it removes a finalizer from a custom
// resource of the operator it undeploys first, the first whose deployable
// has a customResource. (An operator with a webhook cannot be given one
// while no replica of it answers the webhook.)
func TestMakeDeployAndUndeploy(t *testing.T) {
	kubectlBin := kubectlPath(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	ctx := context.Background()
	c, err := envtest.Start(ctx, envtest.Options{BinDir: cluster.BinDir(), ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	kube := kubernetes.NewForConfigOrDie(c.Config())
	dyn := dynamic.NewForConfigOrDie(c.Config())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))

	runMake := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", root, "KUBECTL=" + kubectlBin, "VERSION=v0.0.0-deploytest"}, args...)...)
		// The current context is the test cluster's, whatever the caller's
		// environment says.
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.KubeconfigPath(), "UNDEPLOY_TIMEOUT=60s")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("make %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	// get reads the object o names from the cluster.
	get := func(o *unstructured.Unstructured) error {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			r = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		got, err := r.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err == nil && got.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s %s is being deleted", o.GetKind(), o.GetName())
		}
		return err
	}

	// The first operator with the image IMAGE_REGISTRY/<operator>:VERSION,
	// the others with an IMG each.
	rendered := map[string][]*unstructured.Unstructured{}
	for i, op := range operators {
		image := "ghcr.io/kooperkit/" + op.name + ":v0.0.0-deploytest"
		if i == 0 {
			runMake("deploy", "OPERATOR="+op.name)
		} else {
			image = "registry.example/team/" + op.name + ":v1"
			runMake("deploy", "OPERATOR="+op.name, "IMG="+image)
		}
		rendered[op.name] = objects(t, render(t, op.name, image))
		var dep appsv1.Deployment
		only(t, rendered[op.name], "Deployment", &dep)
		d, err := kube.AppsV1().Deployments(namespaceOf(op.name)).Get(ctx, op.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
			t.Errorf("%s: got image %s, want %s", op.name, got, image)
		}
		replicas := int(ptr.Deref(dep.Spec.Replicas, 1))
		eventually(t, 60*time.Second, fmt.Sprintf("%s's ReplicaSet makes %d pods that Pod Security admission accepts", op.name, replicas), func() error {
			pods, err := kube.CoreV1().Pods(namespaceOf(op.name)).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + op.name})
			if err != nil {
				return err
			}
			if len(pods.Items) != replicas {
				return fmt.Errorf("got %d pods", len(pods.Items))
			}
			return nil
		})
	}
	installed := func(op string) {
		t.Helper()
		for _, o := range rendered[op] {
			if err := get(o); err != nil {
				t.Errorf("%s: %s %s: %v, want it installed", op, o.GetKind(), o.GetName(), err)
			}
		}
	}
	removed := func(op string) {
		t.Helper()
		for _, o := range rendered[op] {
			if err := get(o); !apierrors.IsNotFound(err) {
				t.Errorf("%s: %s %s: got %v, want it gone", op, o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, op := range operators {
		installed(op.name)
	}

	first := operators[0]
	for _, op := range operators {
		if op.customResource != nil {
			first = op
			break
		}
	}
	finalized := make(chan error, 1)
	if first.customResource == nil {
		finalized <- nil
		t.Logf("no operator's deployable has a customResource: make undeploy of %s deletes no custom resource", first.name)
	} else {
		// A custom resource with a finalizer that only a running operator
		// would remove.
		const finalizer = "manifests.kooperkit.io/test"
		gvr, obj := first.customResource()
		obj.SetName("undeploy")
		obj.SetFinalizers([]string{finalizer})
		resources := dyn.Resource(gvr)
		if _, err := resources.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		go func() {
			finalized <- func() error {
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					cr, err := resources.Get(ctx, "undeploy", metav1.GetOptions{})
					if err != nil {
						return fmt.Errorf("could not get the %s: %w", obj.GetKind(), err)
					}
					if cr.GetDeletionTimestamp() == nil {
						continue
					}
					if _, err := kube.AppsV1().Deployments(namespaceOf(first.name)).Get(ctx, first.name, metav1.GetOptions{}); err != nil {
						return fmt.Errorf("the %s is being deleted but the operator's Deployment is not there to finalize it: %w", obj.GetKind(), err)
					}
					cr.SetFinalizers(nil)
					if _, err := resources.Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
						return fmt.Errorf("could not remove the finalizer: %w", err)
					}
					return nil
				}
				return fmt.Errorf("the %s was not deleted within 60s", obj.GetKind())
			}()
		}()
	}

	// make undeploy waits for the namespace controller to empty and delete
	// the operator's namespace.
	runMake("undeploy", "OPERATOR="+first.name)
	if err := <-finalized; err != nil {
		t.Fatal(err)
	}
	removed(first.name)
	for _, op := range operators {
		if op.name != first.name {
			installed(op.name)
		}
	}
	for _, op := range operators {
		if op.name != first.name {
			runMake("undeploy", "OPERATOR="+op.name)
			removed(op.name)
		}
	}

	runMake("undeploy") // every operator, when nothing is left: a no-op
}
