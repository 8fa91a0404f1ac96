package operators_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kooperkit/kooper/faults"
	"github.com/kooperkit/kooper/hack/envtest"
)

var (
	cluster *envtest.Cluster
	// auditLog is the API server's record of the pod-terminator's pod
	// removals and of the multi-resource operator's writes (auditPolicy).
	auditLog string
	// binDir holds the operators' binaries, built once per test process.
	binDir string
)

// root is the repository's root, whose operators/ the binaries are built
// from.
const root = "../.."

// auditPolicy records, with their outcome, the pod deletions and evictions
// of ServiceAccounts (an operator's, each in its own namespace), every write of
// the multi-resource operator's ServiceAccount, and nothing else. Metadata
// is enough for the multi-resource test: it judges a write by the object's
// kind, namespace and name, since a request body would carry the managed-by
// label the operator's own apply adds to whatever it writes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
  verbs: [create, delete, deletecollection]
  resources:
  - group: ""
    resources: ["pods", "pods/eviction"]
- level: Metadata
  users: ["system:serviceaccount:kooper-multi-resource:multi-resource"]
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// One kwok node, so that Deployments' pods are scheduled and become Ready;
// the API server's request limits low enough for 429 storms; an audit log.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "faults-operators-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = filepath.Join(dir, "bin")
	auditLog = filepath.Join(dir, "audit.log")
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	args := append(append([]string(nil), faults.APIServerArgs...),
		"--audit-policy-file="+policy, "--audit-log-path="+auditLog, "--audit-log-mode=blocking")
	return envtest.RunTests(m, envtest.Options{Nodes: 1, APIServerArgs: args}, &cluster)
}

var built sync.Map // operator name → *buildOnce

type buildOnce struct {
	once sync.Once
	path string
	err  error
}

// binary builds operators/<name>/cmd/<name> once per test process and
// returns its path.
func binary(t *testing.T, name string) string {
	t.Helper()
	v, _ := built.LoadOrStore(name, &buildOnce{})
	b := v.(*buildOnce)
	b.once.Do(func() {
		b.path = filepath.Join(binDir, name)
		out, err := exec.Command("go", "-C", root, "build", "-o", b.path, "./operators/"+name+"/cmd/"+name).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %w\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// kubectl runs kubectl against the cluster, as its admin.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), append([]string{"--kubeconfig", cluster.KubeconfigPath()}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// freePort returns a port of 127.0.0.1 nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var runs atomic.Int32

// runName is a name unique to this test process and run, so that a test
// repeated against the same cluster (-count=N) meets nothing of the last.
func runName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), runs.Add(1))
}

// seed is FAULTS_SEED, or a new one.
func seed(t *testing.T) uint64 {
	s, err := faults.Seed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// begin starts an operator's run: it returns the seed (logged), how long
// the faults last (FAULTS_OPERATOR_DURATION, default 60s), the faults'
// random source and the operator's binary, and applies the operator's CRDs
// (manifests/crds/<group>) and RBAC (manifests/rbac/<operator>).
func begin(t *testing.T, operator, group string) (s uint64, d time.Duration, rng *rand.Rand, bin string) {
	t.Helper()
	s = seed(t)
	d = duration(t, 60*time.Second)
	t.Logf("seed %d (FAULTS_SEED=%d to repeat), for %s", s, s, d)
	rng = rand.New(rand.NewPCG(s, s))
	bin = binary(t, operator)
	kubectl(t, "apply", "-k", "manifests/crds/"+group)
	kubectl(t, "apply", "-k", "manifests/rbac/"+operator)
	return s, d, rng, bin
}

// waitFor polls cond every 250ms until it holds, failing after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// duration is FAULTS_OPERATOR_DURATION, or def.
func duration(t *testing.T, def time.Duration) time.Duration {
	if v := os.Getenv("FAULTS_OPERATOR_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("FAULTS_OPERATOR_DURATION=%q: %v", v, err)
		}
		return d
	}
	return def
}

// The operators' leader election timings in a fault run: short, so that a
// run sees many takeovers, with room for the controllers' shutdown timeout
// (2s) in LeaseDuration - RenewDeadline - RetryPeriod, as the operators
// demand. Harness.LeaseDuration is set to it: a blackhole and a SIGSTOP
// outlast it.
const (
	leaseDuration = 7 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// leaseFlags are the operators' flags for those timings.
func leaseFlags() []string {
	return []string{
		"-leader-elect-lease-duration=" + leaseDuration.String(),
		"-leader-elect-renew-deadline=" + renewDeadline.String(),
		"-leader-elect-retry-period=" + retryPeriod.String(),
	}
}

// startHarness starts h with n replicas and stops them after the test,
// showing the ends of their logs if it failed.
func startHarness(t *testing.T, h *faults.Harness, n int) {
	t.Helper()
	if err := h.Start(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	h.StopWhenDone(t, 40)
}

// mixFaults injects faults drawn from rng for d (of the kinds in
// FAULTS_KINDS, or all), calling check after each; it fails the test,
// naming the seed, on the first error of either.
func mixFaults(t *testing.T, h *faults.Harness, rng *rand.Rand, s uint64, d time.Duration, check func() error) map[string]int {
	t.Helper()
	kinds, err := faults.ParseKinds(os.Getenv("FAULTS_KINDS"))
	if err != nil {
		t.Fatalf("FAULTS_KINDS: %v", err)
	}
	counts, err := faults.Mix(context.Background(), h, rng, kinds, d, check)
	if err != nil {
		t.Fatalf("seed %d: %v", s, err)
	}
	return counts
}

// auditEvent is what the tests read of an audit log line.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}
