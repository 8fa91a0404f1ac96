// Package integration proves the dashboards against a real Prometheus: the
// operators run as built binaries against a local control plane, doing the
// work each one's file gives it (a workload, in a file named after the
// operator); Prometheus scrapes them every second; then every
// panel expression of grafana/dashboards is evaluated through Prometheus'
// HTTP API, each of its metric selectors on its own too (but for those
// charting only families no operator run here exposes, such as sharding's),
// and every metric family the catalog lists for an operator must be in its
// /metrics.
package integration

import (
	"os"
	"testing"

	"github.com/kooperkit/kooper/hack/envtest"
)

// binaries is a bare cluster that only says the control plane's binaries
// are there (and where); each test starts the cluster it needs.
var binaries *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(envtest.RunTests(m, envtest.Options{}, &binaries))
}
