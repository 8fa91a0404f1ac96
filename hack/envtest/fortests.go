package envtest

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// ForTests starts a cluster for a package's integration tests, typically
// from TestMain. It is Start, and like Start it returns an error when the
// control plane is missing (wrapping [ErrBinariesMissing] and naming `make
// controlplane`): tests never skip for want of it. `make test` builds the
// binaries first, so a skip could only hide a broken build, and CI would
// behave differently from what a new user runs. [RunTests] wraps it into a
// whole TestMain.
func ForTests(ctx context.Context, opts Options) (*Cluster, error) {
	return Start(ctx, opts)
}

// RunTests is a package's whole TestMain: it starts a cluster with
// ForTests, stores it in *cluster, runs the tests, stops the cluster and
// returns the exit code. When the cluster cannot start it prints the error
// and returns 1 without running any test, so *cluster is never nil while
// the tests run.
//
//	var cluster *envtest.Cluster
//
//	func TestMain(m *testing.M) {
//		os.Exit(envtest.RunTests(m, envtest.Options{}, &cluster))
//	}
func RunTests(m *testing.M, opts Options, cluster **Cluster) int {
	c, err := ForTests(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}
