package integration_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kooperkit/kooper/hack/envtest"
)

// A PodTerminator the CRD schema admits and only the webhook refuses:
// kube-system is protected.
const invalidTerminator = `apiVersion: chaos.kooperkit.io/v1beta1
kind: PodTerminator
metadata:
  name: dev-loop-invalid
spec:
  selector:
    matchLabels:
      app: web
  namespaces: [kube-system]
  termination:
    percent: 10
  dryRun: true
`

// A valid one, which the webhook admits with a warning: more than 50%
// without a dry run. No pod matches it. It is written in v1alpha1, the
// deprecated version: the API server converts it to v1beta1, which it
// stores and the webhook reads, through the conversion webhook the
// operator serves beside the admission one.
const validTerminator = `apiVersion: chaos.kooperkit.io/v1alpha1
kind: PodTerminator
metadata:
  name: dev-loop-valid
spec:
  selector:
    matchLabels:
      app: web
  namespaces: [default]
  terminationPercent: 60
`

// The refusal kubectl prints, from the webhook.
const refusal = `admission webhook "podterminators.chaos.kooperkit.io" denied the request: invalid PodTerminator: ` +
	`spec.namespaces: "kube-system" is protected: the pod-terminator never terminates pods in ` +
	`kooper-pod-terminator, kube-node-lease, kube-public, kube-system`

// The dev loop as the README runs it: make devcluster, then the
// pod-terminator with -kubeconfig .devcluster/kubeconfig -leader-elect=false
// and no flag about its webhook. The API server calls the webhook: kubectl
// apply of a PodTerminator that only the webhook refuses fails with the
// webhook's message, a valid one is created with the webhook's warning,
// and once the operator has stopped its registration is gone. The same
// goes for the CRD's conversion webhook: a PodTerminator written in
// v1alpha1 is converted by the operator, and once it has stopped the CRD
// calls the manifests' Service again. The hints
// the dev cluster prints name the kubectl that matches it, bin/kubectl.
func TestTheDevLoopServesThePodTerminatorsWebhook(t *testing.T) {
	needBinaries(t)
	state := filepath.Join(t.TempDir(), ".devcluster")
	cluster := start(t, state)
	kubeconfig := cluster.ready(t)
	hints := []string{"    its webhook:    served on 127.0.0.1 with " + filepath.Join(state, "webhook", "tls.crt")}
	if os.Getenv(envtest.EnvBinDir) == "" {
		hints = append(hints, "    kubectl:        bin/kubectl --kubeconfig "+kubeconfig+" get crds,nodes\n")
	}
	for _, h := range hints {
		if !strings.Contains(cluster.out.String(), h) {
			t.Errorf("the dev cluster did not print %q:\n%s", h, cluster.out.String())
		}
	}

	// The dev loop's flags, and both addresses on free ports only because
	// their defaults (:8080, :9443) may be taken by another test running
	// meanwhile: the operator tutorial (docs/integration) runs this very
	// dev loop with the defaults.
	whAddr := freeAddr(t)
	operator := launch(t, podTerminator, "-kubeconfig", kubeconfig, "-leader-elect=false", "-http-addr=127.0.0.1:0", "-webhook-addr="+whAddr)
	m := operator.await(t, regexp.MustCompile(`registered the admission webhook.*url=(\S+)`), 60*time.Second)
	if want := "https://" + whAddr + "/validate/podterminators"; m[1] != want {
		t.Errorf("got the webhook registered at %s, want %s", m[1], want)
	}
	m = operator.await(t, regexp.MustCompile(`registered the conversion webhook.*url=(\S+)`), 10*time.Second)
	if want := "https://" + whAddr + "/convert"; m[1] != want {
		t.Errorf("got the conversion webhook registered at %s, want %s", m[1], want)
	}

	// The API server calls it once it has read the configuration.
	began := time.Now()
	for {
		_, stderr, err := kubectl(t, kubeconfig, invalidTerminator, "apply", "--dry-run=server", "-f", "-")
		if err != nil && strings.Contains(stderr, refusal) {
			t.Logf("the webhook refused a server-side dry run %s after its registration", time.Since(began).Round(time.Millisecond))
			break
		}
		if time.Since(began) > 30*time.Second {
			t.Fatalf("the webhook did not refuse within 30s: got %v, %q, want %q\noperator:\n%s", err, stderr, refusal, operator.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	stdout, stderr, err := kubectl(t, kubeconfig, invalidTerminator, "apply", "-f", "-")
	t.Logf("kubectl apply of %s: %v\nstdout: %sstderr: %s", "dev-loop-invalid", err, stdout, stderr)
	if err == nil || !strings.Contains(stderr, refusal) {
		t.Errorf("got %v, stderr %q, want the refusal %q", err, stderr, refusal)
	}
	stdout, stderr, err = kubectl(t, kubeconfig, validTerminator, "apply", "-f", "-")
	t.Logf("kubectl apply of %s: %v\nstdout: %sstderr: %s", "dev-loop-valid", err, stdout, stderr)
	if want := "podterminator.chaos.kooperkit.io/dev-loop-valid created\n"; err != nil || stdout != want {
		t.Errorf("got %v, stdout %q, want %q", err, stdout, want)
	}
	// The API server's deprecation warning, then the webhook's, which
	// names the v1beta1 field it read.
	if want := "Warning: chaos.kooperkit.io/v1alpha1 PodTerminator is deprecated; use chaos.kooperkit.io/v1beta1 (spec.period, spec.termination)\n" +
		"Warning: termination.percent 60 without dryRun or maxPods terminates most matching pods every period; try dryRun: true first\n"; stderr != want {
		t.Errorf("got stderr %q, want the deprecation and the webhook's warning %q", stderr, want)
	}
	stdout, stderr, err = kubectl(t, kubeconfig, "", "get", "podterminators.v1beta1.chaos.kooperkit.io", "dev-loop-valid", "-o", "jsonpath={.spec.termination.percent} {.spec.period}")
	if want := "60 1m0s"; err != nil || stdout != want {
		t.Errorf("got %v, %q (stderr %q) reading it in v1beta1, want %q", err, stdout, stderr, want)
	}

	// Ctrl-C (SIGINT) or SIGTERM: the operator unregisters its webhook and
	// exits 0.
	if err := operator.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := operator.wait(t, 30*time.Second); err != nil {
		t.Errorf("the operator exited with %v, want 0:\n%s", err, operator.out.String())
	}
	if out := operator.out.String(); !strings.Contains(out, "unregistered the admission webhook") {
		t.Errorf("the operator did not say it unregistered its webhook:\n%s", out)
	}
	stdout, stderr, err = kubectl(t, kubeconfig, "", "get", "validatingwebhookconfigurations", "-o", "name")
	if err != nil || stdout != "" {
		t.Errorf("got %v, %q (stderr %q) once the operator stopped, want no webhook configuration left", err, stdout, stderr)
	}
	if out := operator.out.String(); !strings.Contains(out, "put the CRD's conversion back") {
		t.Errorf("the operator did not say it put the CRD's conversion back:\n%s", out)
	}
	stdout, stderr, err = kubectl(t, kubeconfig, "", "get", "crd", "podterminators.chaos.kooperkit.io", "-o",
		"jsonpath={.spec.conversion.webhook.clientConfig.url}{.spec.conversion.webhook.clientConfig.service.name}")
	if want := "pod-terminator-webhook"; err != nil || stdout != want {
		t.Errorf("got %v, %q (stderr %q) as the CRD's conversion webhook once the operator stopped, want the manifests' Service %q", err, stdout, stderr, want)
	}

	stop(t, state, "==> dev cluster stopped")
	cluster.stopped(t, kubeconfig)
}

// kubectl runs bin/kubectl, the one make devcluster's hints name, with
// kubeconfig, stdin and args.
func kubectl(t *testing.T, kubeconfig, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	dir := os.Getenv(envtest.EnvBinDir)
	if dir == "" {
		dir = filepath.Join(root, "bin")
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, envtest.BinKubectl), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err = cmd.Run()
	if exit := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		t.Fatalf("could not run kubectl: %v", err)
	}
	return out.String(), errOut.String(), err
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
