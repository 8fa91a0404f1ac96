package impls

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/bench/internal/memsource"
	"github.com/kooperkit/kooper/kooper/controller"
)

// Kooper is this repository's controller with its defaults (no logger, no
// metrics recorder), given the Retriever itself.
type Kooper struct{}

// Name implements Impl.
func (Kooper) Name() string { return NameKooper }

// Run implements Impl.
func (Kooper) Run(ctx context.Context, src *memsource.Source, handle func(runtime.Object)) error {
	c, err := controller.New(controller.Config{
		Name: "bench",
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			handle(obj)
			return nil
		}),
		Retriever:         src,
		ConcurrentWorkers: Workers,
		ResyncInterval:    -1,
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
