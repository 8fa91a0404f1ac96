package integration_test

import (
	"os"
	"testing"

	"github.com/kooperkit/kooper/kooper/devcluster"
)

// region: testmain

var cluster *devcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(devcluster.RunTests(m, devcluster.Options{ControllerManager: true}, &cluster))
}

// endregion: testmain
