package impls

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// Kooper is this repository's controller with its defaults (no logger, no
// metrics recorder), given the Retriever itself.
type Kooper struct {
	// DisableDeepCopy hands the handler the cached object (read-only use).
	DisableDeepCopy bool
}

// Name implements Impl.
func (k Kooper) Name() string {
	if k.DisableDeepCopy {
		return NameKooperNoCopy
	}
	return NameKooper
}

// Run implements Impl.
func (k Kooper) Run(ctx context.Context, src *controllertest.Retriever, handle func(runtime.Object)) error {
	c, err := controller.New(controller.Config{
		Name: "bench",
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			handle(obj)
			return nil
		}),
		Retriever:         src,
		ConcurrentWorkers: Workers,
		ResyncInterval:    -1,
		DisableDeepCopy:   k.DisableDeepCopy,
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
