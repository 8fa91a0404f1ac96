package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// ForTests starts a cluster for a package's integration tests, typically
// from TestMain. When the binaries are missing it returns a nil Cluster and
// no error, so tests can skip with a hint, except under CI=true, where a
// skipped integration test would hide a broken build: there it returns the
// error. [RunTests] wraps it into a whole TestMain.
func ForTests(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := Start(ctx, opts)
	if errors.Is(err, ErrBinariesMissing) && os.Getenv("CI") != "true" {
		fmt.Fprintf(os.Stderr, "devcluster: skipping integration tests: %v\n", err)
		return nil, nil
	}
	return c, err
}

// SkipHint is the message for tests skipped because ForTests returned no
// cluster.
const SkipHint = "no local control plane: run `make controlplane` (or set " + EnvBinDir + ")"

// RunTests is a package's whole TestMain: it starts a cluster with
// ForTests, stores it in *cluster (nil when skipping), runs the tests, stops
// the cluster and returns the exit code.
//
//	var cluster *devcluster.Cluster
//
//	func TestMain(m *testing.M) {
//		os.Exit(devcluster.RunTests(m, devcluster.Options{}, &cluster))
//	}
func RunTests(m *testing.M, opts Options, cluster **Cluster) int {
	c, err := ForTests(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*cluster = c
	code := m.Run()
	if c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return code
}
