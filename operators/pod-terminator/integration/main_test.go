package integration_test

import (
	"fmt"
	"os"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/kooperkit/kooper/hack/envtest"
	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
)

// region: testmain

var cluster *envtest.Cluster

// One kwok node: the scheduler binds pods to it and kwok makes them Running
// and Ready, as a kubelet would. The operator counts only Ready pods.
func TestMain(m *testing.M) {
	// The operator runs in this process beside the tests' own clients, and
	// client-go reads its metrics hooks without synchronisation: set them
	// before any client starts, as the operator's main does by calling Run.
	if err := kooperprom.RegisterRESTClientMetrics(prom.NewRegistry()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(envtest.RunTests(m, envtest.Options{ControllerManager: true, Nodes: 1}, &cluster))
}

// endregion: testmain
