package controller_test

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// A parent kind owning children: ConfigMaps own Secrets (each Secret has a
// controller reference to its ConfigMap). One controller, one queue: a
// Secret's change, its deletion included, has its ConfigMap handled, and
// the handler reads the ConfigMap's Secrets from the cache with Of.
func ExampleOwns() {
	configMaps := controllertest.NewRetriever(&corev1.ConfigMap{})
	secrets := controllertest.NewRetriever(&corev1.Secret{})
	web := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "web-uid"}}
	_, _ = configMaps.Add(web)
	ref := metav1.NewControllerRef(web, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-tls",
		OwnerReferences: []metav1.OwnerReference{*ref}}}
	password := tls.DeepCopy()
	password.Name = "web-password"
	_, _ = secrets.Add(tls)
	_, _ = secrets.Add(password)
	handled := make(chan struct{})

	// region: owns
	children := controller.Owns[*corev1.Secret](secrets)
	ctrl, err := controller.New(controller.Config{
		Name:      "web",
		Retriever: configMaps,
		Handler: controller.Typed(
			func(_ context.Context, cm *corev1.ConfigMap) error {
				var names []string
				for _, s := range children.Of(cm) { // from the cache, in key order
					names = append(names, s.Name)
				}
				fmt.Println(cm.Name, "owns", names)
				handled <- struct{}{}
				return nil
			}),
	}, children) // a Secret's change queues the ConfigMap that controls it
	// endregion: owns
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	<-handled
	_ = secrets.Delete(tls)
	<-handled // the deletion had the owner handled: it would make the Secret again
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// web owns [web-password web-tls]
	// web owns [web-password]
	// Run: <nil>
}

// Two controllers run together without leader election: the first error
// would stop both.
func ExampleRunAll() {
	pods := controllertest.NewRetriever(&corev1.Pod{})
	_, _ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})
	services := controllertest.NewRetriever(&corev1.Service{})
	_, _ = services.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}})

	handled := make(chan string)
	record := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return controller.Terminal(err)
		}
		handled <- fmt.Sprintf("%T %s", obj, m.GetName())
		return nil
	})
	var ctrls []*controller.Controller
	for name, r := range map[string]controller.Retriever{"pods": pods, "services": services} {
		c, err := controller.New(controller.Config{Name: name, Handler: record, Retriever: r})
		if err != nil {
			fmt.Println(err)
			return
		}
		ctrls = append(ctrls, c)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		got := []string{<-handled, <-handled}
		slices.Sort(got)
		fmt.Println(got)
		cancel()
	}()
	fmt.Println("RunAll:", controller.RunAll(ctx, ctrls...))
	// Output:
	// [*v1.Pod web-1 *v1.Service web]
	// RunAll: <nil>
}
