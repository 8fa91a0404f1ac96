package integration_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kooperkit/kooper/kooper/devcluster"
)

var cluster *devcluster.Cluster

func TestMain(m *testing.M) {
	c, err := devcluster.ForTests(context.Background(), devcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	if c != nil {
		_ = c.Stop()
	}
	os.Exit(code)
}
