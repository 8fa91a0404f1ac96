package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/hack/envtest"
)

// crdDir holds the generated CRDs, one directory per API group, relative to
// this package.
const crdDir = "../../manifests/crds"

var cluster *envtest.Cluster

// TestMain starts one control plane for the package's integration tests and
// installs the generated CRDs in it. Without the binaries the package fails
// with the error naming `make controlplane`: make test builds them first.
func TestMain(m *testing.M) {
	ctx := context.Background()
	c, err := envtest.ForTests(ctx, envtest.Options{})
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

// clientset returns the generated typed clientset, which serves every API
// group of apis/.
func clientset(t *testing.T) versioned.Interface {
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

// A kubectlCase is a kubectl command and texts its output must contain.
type kubectlCase struct {
	args []string
	want []string
}

// kubectlShows runs each case's kubectl command against the cluster, as
// its admin, and checks that the output contains each wanted text, runs of
// whitespace compared as one space (kubectl pads its columns).
func kubectlShows(t *testing.T, cases []kubectlCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl),
				append([]string{"--kubeconfig", cluster.KubeconfigPath()}, tt.args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %v: %v\n%s", tt.args, err, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(strings.Join(strings.Fields(string(out)), " "), strings.Join(strings.Fields(want), " ")) {
					t.Errorf("got:\n%s\nwant it to contain %q", out, want)
				}
			}
		})
	}
}
