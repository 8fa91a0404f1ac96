// Command tenant-namespace is the shortest operator of two kinds, the one
// docs/concepts.md quotes: a Tenant (apis/tenancy) gets a namespace,
// tenant-<name>, which it controls. Deleting the Tenant deletes the
// namespace (the garbage collector follows the owner reference); deleting
// the namespace by hand has it made again, since the namespaces are a
// source of the Tenant controller. It needs the Tenant CRD
// (manifests/crds), and the rights to list and watch Tenants and
// namespaces and to create namespaces.
//
//	KUBECONFIG=.devcluster/kubeconfig go run ./examples/tenant-namespace
//
// The multi-resource operator (operators/multi-resource) is the complete
// version: more children, status, metrics, leader election.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/controller"
)

// region: operator

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG")) // unset: in-cluster
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, cfg)
		stop()
	}
	if err != nil {
		log.Fatal(err)
	}
}

// run runs the Tenant controller until ctx is done.
func run(ctx context.Context, cfg *rest.Config) error {
	tenants := versioned.NewForConfigOrDie(cfg).TenancyV1alpha1().Tenants()
	namespaces := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces()
	// The namespaces are a source of the Tenant controller: a change to
	// one, its deletion included, queues the Tenant that controls it.
	owned := controller.Owns[*corev1.Namespace](controller.NewRetriever(namespaces.List, namespaces.Watch))
	ctrl, err := controller.New(controller.Config{
		Name:      "tenants",
		Retriever: controller.NewRetriever(tenants.List, tenants.Watch),
		Handler: controller.Typed(func(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
			if len(owned.Of(t)) > 0 || t.DeletionTimestamp != nil {
				return nil // made already (read from the cache), or going
			}
			ref := metav1.NewControllerRef(t, tenancyv1alpha1.SchemeGroupVersion.WithKind("Tenant"))
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + t.Name, OwnerReferences: []metav1.OwnerReference{*ref}}}
			_, err := namespaces.Create(ctx, ns, metav1.CreateOptions{})
			return err // an old one still terminating: retried with backoff
		}),
	}, owned)
	if err != nil {
		return err
	}
	return ctrl.Run(ctx)
}

// endregion: operator
