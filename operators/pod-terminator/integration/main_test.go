package integration_test

import (
	"os"
	"testing"

	"github.com/kooperkit/kooper/kooper/devcluster"
)

// region: testmain

var cluster *devcluster.Cluster

// One kwok node: the scheduler binds pods to it and kwok makes them Running
// and Ready, as a kubelet would. The operator counts only Ready pods.
func TestMain(m *testing.M) {
	os.Exit(devcluster.RunTests(m, devcluster.Options{ControllerManager: true, Nodes: 1}, &cluster))
}

// endregion: testmain
