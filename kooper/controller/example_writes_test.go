package controller_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/owner"
)

// A controller of ConfigMaps labelled role=parent that gives each a child
// ConfigMap named by the API server (generateName). Its clients, the
// retrievers' and the handler's, are built from TrackWrites's config: the
// next handling of a parent waits until the children's cache has seen the
// child the last one created, so the handler does not create a second.
func ExampleTrackWrites() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Println(err)
		return
	}
	// region: trackwrites
	client := kubernetes.NewForConfigOrDie(controller.TrackWrites(cfg))
	configMaps := client.CoreV1().ConfigMaps("")
	labelled := func(role string) controller.Retriever {
		return controller.NewRetriever(
			func(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
				opts.LabelSelector = "role=" + role
				return configMaps.List(ctx, opts)
			},
			func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.LabelSelector = "role=" + role
				return configMaps.Watch(ctx, opts)
			})
	}
	children := controller.Owns[*corev1.ConfigMap](labelled("child"))
	handle := func(ctx context.Context, parent *corev1.ConfigMap) error {
		if len(children.Of(parent)) > 0 {
			return nil // the cache holds this handler's own last create
		}
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: parent.Name + "-", Namespace: parent.Namespace,
			Labels: map[string]string{"role": "child"},
		}}
		if err := owner.SetController(parent, child, corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil {
			return err
		}
		_, err := client.CoreV1().ConfigMaps(parent.Namespace).Create(ctx, child, metav1.CreateOptions{})
		return err
	}
	// endregion: trackwrites
	ctrl, err := controller.New(controller.Config{
		Name: "parents", Retriever: labelled("parent"), Handler: controller.Typed(handle),
	}, children)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = ctrl.Run(context.Background())
}
