package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
)

// A workload is an operator the end-to-end test runs under Prometheus, with
// the work that gives each family of its own series. Each operator's is
// declared in a test file of its own, named after the operator, which
// registers it from init: removing the operator removes its file, and the
// test runs the operators that are left.
type workload struct {
	name string
	// args are its flags besides -kubeconfig, -http-addr, -namespace
	// (kooper-<name>, made by the test) and -log-level.
	args []string
	// work gives it work once the CRDs are installed and it leads.
	work func(ctx context.Context, t *testing.T, c clients)
	// answered are PromQL expressions that return series once Prometheus
	// has seen the work, for long enough for a rate.
	answered []string
	// checks are subtests run once they do, by name.
	checks map[string]func(ctx context.Context, t *testing.T, c clients)
	// load, if set, adds a burst of work, and waits until Prometheus sees
	// it handled, for the picture promplot draws.
	load func(ctx context.Context, t *testing.T, c clients)
}

// clients are what a workload's work and checks act and look through.
type clients struct {
	kube   kubernetes.Interface
	kooper versioned.Interface
	prom   prometheus
}

// workloads are the registered workloads (register), sorted by name.
var workloads []workload

// register adds w to workloads; each operator's file calls it from init.
func register(w workload) {
	i, _ := slices.BinarySearchFunc(workloads, w.name, func(a workload, name string) int { return strings.Compare(a.name, name) })
	workloads = slices.Insert(workloads, i, w)
}
