package controller

import (
	"context"
	"fmt"
	"sync"
)

// RunAll runs every controller of cs with Run until ctx is done, and
// returns once all have returned: nil after a clean stop. If one returns
// an error (it could not start, or its handlers outlived ShutdownTimeout),
// the others are stopped, their context cancelled, and RunAll returns the
// first error once they have returned too. It is how an operator runs
// several controllers in one process without leader election, for one
// replica; under leader election, package leaderelection runs them. With
// no controller it returns nil at once; a nil controller is refused, before
// any starts, with an error wrapping ErrInvalidConfig.
func RunAll(ctx context.Context, cs ...*Controller) error {
	for i, c := range cs {
		if c == nil {
			return fmt.Errorf("%w: controller %d of RunAll is nil", ErrInvalidConfig, i)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, c := range cs {
		wg.Go(func() {
			if err := c.Run(ctx); err != nil {
				once.Do(func() { first = err })
				cancel()
			}
		})
	}
	wg.Wait()
	return first
}
