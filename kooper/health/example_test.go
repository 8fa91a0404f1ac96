package health_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/health"
)

// filled stands for a *controller.Controller whose cache is filled.
type filled struct{}

func (filled) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (filled) HasSynced() bool               { return true }

// Readiness asks a *leaderelection.Runner which role this replica has.
// Without leader election the replica is ready once its caches are filled;
// under leader election, a new runner is a standby, ready to take over,
// until it holds the Lease.
func ExampleReadiness() {
	ctrl := filled{}
	single, err := leaderelection.New(leaderelection.Config{Disabled: true}, ctrl)
	if err != nil {
		fmt.Println(err)
		return
	}
	replica, err := leaderelection.New(leaderelection.Config{
		Name:      "pod-terminator",
		Namespace: "kooper-pod-terminator",
		Client:    fake.NewClientset().CoordinationV1(),
	}, ctrl)
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, r := range []*leaderelection.Runner{single, replica} {
		// What /readyz answers.
		status, err := health.Readiness(r, ctrl)()
		if err != nil {
			fmt.Println(503, err)
			continue
		}
		fmt.Println(200, status)
	}
	// Output:
	// 200 synced
	// 200 standby
}
