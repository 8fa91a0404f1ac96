package procnode_test

import (
	"context"
	"fmt"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/envtest/procnode"
)

// A local control plane with the scheduler and a node that runs the
// pods of an operator's Deployment from the image make image built.
func Example() {
	ctx := context.Background()
	cluster, err := envtest.Start(ctx, envtest.Options{ControllerManager: true, Scheduler: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = cluster.Stop() }()
	node, err := procnode.Start(ctx, procnode.Options{
		Config: cluster.Config(),
		Images: map[string]procnode.Image{
			"ghcr.io/kooperkit/pod-terminator:dev": {Tarball: "bin/images/pod-terminator.tar"},
		},
	})
	if err != nil {
		fmt.Println(err) // wraps procnode.ErrUnsupported without root
		return
	}
	defer func() { _ = node.Stop(ctx) }()
	// kubectl apply -k manifests/pod-terminator with that image: its pods
	// run here, and ContainerLogs says where their output is.
	for _, l := range node.ContainerLogs() {
		fmt.Println(l.Namespace, l.Pod, l.Container, l.Dir)
	}
}
