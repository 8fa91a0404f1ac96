package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/hack/envtest"
)

var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(envtest.RunTests(m, envtest.Options{}, &cluster))
}

// logged collects which replica printed which pod.
type logged struct {
	mu   sync.Mutex
	by   map[string]map[string]bool // pod → replicas that printed it
	last map[string]string          // pod → replica that printed it last
}

var podLine = regexp.MustCompile(`^pod (\S+) is \S* \(slot \d+\)$`)

func (l *logged) read(replica string, r io.Reader) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		m := podLine.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		l.mu.Lock()
		if l.by[m[1]] == nil {
			l.by[m[1]] = map[string]bool{}
		}
		l.by[m[1]][replica] = true
		l.last[m[1]] = replica
		l.mu.Unlock()
	}
}

// Three replicas of the example share the pods: each pod is printed by one
// replica. When one stops, the pods it printed are printed by the others
// on their next change.
func TestReplicasShareThePodsAndTakeOverAStoppedOnesShare(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pod-sharding")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sharding-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const pods = 60
	for i := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
		if _, err := client.CoreV1().Pods(ns.Name).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	log := &logged{by: map[string]map[string]bool{}, last: map[string]string{}}
	procs := map[string]*exec.Cmd{}
	var readers sync.WaitGroup
	addrs := map[string]string{}
	for _, id := range []string{"one", "two", "three"} {
		addrs[id] = freeAddr(t)
		cmd := exec.Command(bin, "-kubeconfig", cluster.KubeconfigPath(), "-namespace", ns.Name, "-identity", id, "-metrics-addr", addrs[id])
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = &prefixWriter{t: t, prefix: id}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[id] = cmd
		readers.Go(func() { log.read(id, out) })
	}
	t.Cleanup(func() {
		for _, cmd := range procs {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, cmd := range procs {
			_ = cmd.Wait()
		}
		readers.Wait()
	})

	// Once the three hold their quotas, touch every pod: each is printed
	// by exactly one replica.
	waitFor(t, 60*time.Second, "each replica prints pods", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		seen := map[string]bool{}
		for _, r := range log.last {
			seen[r] = true
		}
		return len(seen) == 3
	})
	time.Sleep(3 * time.Second) // the slots settle: a replica started first held them all
	touch(t, client, ns.Name, pods, "1")
	printedBy := func(round string) map[string]string {
		t.Helper()
		got := map[string]string{}
		waitFor(t, 30*time.Second, "every pod is printed after round "+round, func() bool {
			log.mu.Lock()
			defer log.mu.Unlock()
			return len(log.last) == pods
		})
		log.mu.Lock()
		defer log.mu.Unlock()
		for p, r := range log.last {
			got[p] = r
		}
		return got
	}
	resetAfter := func() {
		log.mu.Lock()
		log.by, log.last = map[string]map[string]bool{}, map[string]string{}
		log.mu.Unlock()
	}
	resetAfter()
	touch(t, client, ns.Name, pods, "2")
	first := printedBy("2")
	log.mu.Lock()
	for p, rs := range log.by {
		if len(rs) != 1 {
			t.Errorf("pod %s printed by %d replicas: %v", p, len(rs), rs)
		}
	}
	log.mu.Unlock()
	share := map[string]int{}
	for _, r := range first {
		share[r]++
	}
	t.Logf("pods printed per replica: %v", share)

	// /readyz says how the replica shards, /metrics how many slots it owns.
	for _, id := range []string{"one", "two", "three"} {
		ready := get(t, "http://"+addrs[id]+"/readyz")
		if !regexp.MustCompile(`^sharded server-side: 1[01] of 32 slots`).MatchString(ready) {
			t.Errorf("%s /readyz: %q", id, ready)
		}
		metrics := get(t, "http://"+addrs[id]+"/metrics")
		if !regexp.MustCompile(`(?m)^kooper_sharding_slots\{group="pod-sharding",mode="server-side"\} 1[01]$`).MatchString(metrics) {
			t.Errorf("%s /metrics has no kooper_sharding_slots of 10 or 11:\n%s", id, grepLines(metrics, "kooper_sharding"))
		}
	}

	// Stop "two": its pods go to the others.
	_ = procs["two"].Process.Signal(syscall.SIGTERM)
	if err := procs["two"].Wait(); err != nil {
		t.Errorf("replica two exited with %v after SIGTERM", err)
	}
	delete(procs, "two")
	time.Sleep(2 * time.Second)
	resetAfter()
	touch(t, client, ns.Name, pods, "3")
	after := printedBy("3")
	moved := 0
	for p, r := range after {
		if r == "two" {
			t.Errorf("pod %s printed by the stopped replica", p)
		}
		if first[p] == "two" {
			moved++
		}
	}
	t.Logf("%d pods of the stopped replica printed by the others", moved)
}

// touch labels every pod with round, so each replica prints its pods again.
func touch(t *testing.T, client kubernetes.Interface, ns string, pods int, round string) {
	t.Helper()
	for i := range pods {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"round":%q}}}`, round)
		if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), fmt.Sprintf("p%02d", i), "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// prefixWriter logs a replica's stderr lines about slots, for the record.
type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if strings.Contains(line, "slots owned") || strings.Contains(line, "level=ERROR") {
			w.t.Logf("[%s] %s", w.prefix, line)
		}
	}
	return len(p), nil
}

// freeAddr returns a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// get returns the body of url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test's one-off request
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
