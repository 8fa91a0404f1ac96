package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/devcluster"
)

// crdDir holds the generated CRDs, one directory per API group, relative to
// this package.
const crdDir = "../../../manifests/crds"

var cluster *devcluster.Cluster

// TestMain starts one control plane for the package's integration tests and
// installs the generated CRDs in it. Without the binaries the package fails
// with the error naming `make controlplane`: make test builds them first.
func TestMain(m *testing.M) {
	ctx := context.Background()
	c, err := devcluster.ForTests(ctx, devcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := installCRDs(ctx, c.Config()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = c.Stop()
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// chaosClient returns the generated typed clientset.
func chaosClient(t *testing.T) versioned.Interface {
	t.Helper()
	return versioned.NewForConfigOrDie(cluster.Config())
}

// installCRDs creates every CRD in crdDir and waits until each is Established
// (served by the API server).
func installCRDs(ctx context.Context, cfg *rest.Config) error {
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("could not build the apiextensions client: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(crdDir, "*", "*_*.yaml"))
	if err != nil {
		return fmt.Errorf("could not list CRDs: %w", err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD in %s: run make generate", crdDir)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("could not read CRD: %w", err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return fmt.Errorf("could not decode CRD %s: %w", f, err)
		}
		if _, err := crds.Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("could not create CRD %s: %w", crd.Name, err)
		}
		if err := waitEstablished(ctx, client, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, client apiextensions.Interface, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("could not get CRD %s: %w", name, err)
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not established after 30s: %+v", name, crd.Status.Conditions)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
