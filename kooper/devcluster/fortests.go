package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// ForTests starts a cluster for a package's integration tests, typically
// from TestMain. When the binaries are missing it returns a nil Cluster and
// no error, so tests can skip with a hint, except under CI=true, where a
// skipped integration test would hide a broken build: there it returns the
// error.
//
//	var cluster *devcluster.Cluster
//
//	func TestMain(m *testing.M) {
//		c, err := devcluster.ForTests(context.Background(), devcluster.Options{})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		cluster = c
//		code := m.Run()
//		if c != nil {
//			_ = c.Stop()
//		}
//		os.Exit(code)
//	}
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
