package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/hack/envtest"
)

// crdTimeout bounds applying the CRDs and waiting until they are served.
const crdTimeout = time.Minute

// applyCRDs applies the kustomization in dir with kubectl, as make run does
// (so the kustomization's labels are set, and a later kubectl apply -k of
// changed CRDs updates them without a warning), then waits until the API
// server serves every CRD it applied: an operator started next finds its
// resources. It returns the CRDs' names.
func applyCRDs(ctx context.Context, cluster *envtest.Cluster, kubectl, dir string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, crdTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", cluster.KubeconfigPath(), "apply", "-k", dir, "-o", "name")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("could not apply %s with %s: %w: %s", dir, kubectl, err, strings.TrimSpace(stderr.String()))
	}
	var names []string
	for _, obj := range strings.Fields(stdout.String()) {
		if name, ok := strings.CutPrefix(obj, "customresourcedefinition.apiextensions.k8s.io/"); ok {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s applied no CRD: run make manifests", dir)
	}
	client, err := apiextensions.NewForConfig(cluster.Config())
	if err != nil {
		return nil, fmt.Errorf("could not create a client: %w", err)
	}
	for _, name := range names {
		if err := waitEstablished(ctx, client, name); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func waitEstablished(ctx context.Context, client apiextensions.Interface, name string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("could not read CRD %s: %w", name, err)
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s is not established: %w (conditions %+v)", name, context.Cause(ctx), crd.Status.Conditions)
		case <-tick.C:
		}
	}
}
