package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// A Lease crafted by anyone who can write Leases in the namespace, with
// another slot count (64) and claiming every slot, kept renewed: the
// running replicas keep all 32 slots between them and stay ready, and
// each logs one warning naming it; a replica started meanwhile gets no
// slot and says so on /readyz; once the Lease is gone it takes its share.
// (Security review item 11: every replica held 0 of 32 slots for 150 s
// while /readyz answered 200.)
func TestACraftedLeaseIsIgnoredReportedAndShowsOnReadyz(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pod-sharding")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crafted-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	replicas := map[string]*process{}
	start := func(id string) *process {
		p := startProcess(t, bin, ns.Name, id)
		replicas[id] = p
		return p
	}
	t.Cleanup(func() {
		for _, p := range replicas {
			p.stop()
		}
	})
	for _, id := range []string{"one", "two", "three"} {
		start(id)
	}
	three := []string{"one", "two", "three"}
	// Settled: each holds its share, 10 or 11, so no slot moves any more
	// (right after start, one may hold them all and still be handing them
	// over, which would look like slots lost to the attack).
	waitFor(t, 60*time.Second, "the three replicas hold 32 slots between them, 10 or 11 each, each ready", func() bool {
		total, _, ok := holdings(replicas, three)
		if !ok || total != 32 {
			return false
		}
		for _, id := range three {
			if n, _ := slotsOf(replicas[id].addr); n < 32/3 || n > (32+2)/3 {
				return false
			}
		}
		return true
	})
	_, by, _ := holdings(replicas, three)
	t.Logf("before the crafted Lease: %s", by)

	// The attacker: slot count 64, every slot claimed, an hour's lease
	// duration, renewed every 2 s.
	attack, stopAttack := context.WithCancel(ctx)
	var attacker sync.WaitGroup
	t.Cleanup(func() { stopAttack(); attacker.Wait() })
	crafted := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-sharding-attacker", Namespace: ns.Name,
			Labels:      map[string]string{"sharding.kooperkit.io/group": "pod-sharding"},
			Annotations: map[string]string{"sharding.kooperkit.io/slot-count": "64", "sharding.kooperkit.io/slots": "0-63"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("attacker"), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	if _, err := client.CoordinationV1().Leases(ns.Name).Create(ctx, crafted, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	attacker.Go(func() {
		for {
			select {
			case <-attack.Done():
				return
			case <-time.After(2 * time.Second):
			}
			l, err := client.CoordinationV1().Leases(ns.Name).Get(attack, crafted.Name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, _ = client.CoordinationV1().Leases(ns.Name).Update(attack, l, metav1.UpdateOptions{})
		}
	})

	// For longer than a lease duration (15 s), the three keep every slot
	// and stay ready.
	attacked := time.Now()
	for time.Since(attacked) < 20*time.Second {
		total, by, ok := holdings(replicas, three)
		if total != 32 || !ok {
			t.Fatalf("%s after the crafted Lease: the replicas hold %d of 32 slots between them (%s), want 32, every /readyz 200",
				time.Since(attacked).Round(time.Millisecond), total, by)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("20 s after the crafted Lease: %s", by)

	// A fourth replica started now gets nothing (every slot is held, and
	// the crafted Lease claims each one the others could give up) and is
	// not ready, naming the Lease.
	four := start("four")
	waitFor(t, 40*time.Second, "replica four is not ready, naming the crafted Lease", func() bool {
		code, body := readyz(four.addr)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "pod-sharding-attacker")
	})
	code, body := readyz(four.addr)
	t.Logf("four /readyz during the attack: %d %s", code, strings.TrimSpace(body))
	if total, by, ok := holdings(replicas, three); total != 32 || !ok {
		t.Errorf("with four started: the three hold %d of 32 slots (%s), want 32, every /readyz 200", total, by)
	}

	// One warning per replica names the crafted Lease, not one per renewal.
	for _, id := range three {
		lines := replicas[id].lines(`level=warn.*pod-sharding-attacker`)
		if len(lines) != 1 {
			t.Errorf("%s logged %d warnings naming the crafted Lease, want 1:\n%s", id, len(lines), strings.Join(lines, "\n"))
		} else {
			t.Logf("[%s] %s", id, lines[0])
		}
	}

	// The attacker stops and its Lease is deleted: four takes its share.
	stopAttack()
	attacker.Wait()
	if err := client.CoordinationV1().Leases(ns.Name).Delete(ctx, crafted.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	all := []string{"one", "two", "three", "four"}
	waitFor(t, 30*time.Second, "the four replicas hold 32 slots between them, each 8 and ready", func() bool {
		total, _, ok := holdings(replicas, all)
		if !ok || total != 32 {
			return false
		}
		for _, id := range all {
			if n, _ := slotsOf(replicas[id].addr); n != 8 {
				return false
			}
		}
		return true
	})
	_, by, _ = holdings(replicas, all)
	t.Logf("after the crafted Lease is gone: %s", by)
}

// process is a replica of the example run as a process.
type process struct {
	cmd  *exec.Cmd
	addr string

	mu     sync.Mutex
	stderr bytes.Buffer
}

func startProcess(t *testing.T, bin, ns, id string) *process {
	t.Helper()
	p := &process{addr: freeAddr(t)}
	p.cmd = exec.Command(bin, "-kubeconfig", cluster.KubeconfigPath(), "-namespace", ns, "-identity", id, "-metrics-addr", p.addr)
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Write(b)
}

// lines returns the lines of stderr matching pattern.
func (p *process) lines(pattern string) []string {
	re := regexp.MustCompile(pattern)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

var slotsLine = regexp.MustCompile(`(\d+) of 32 slots`)

// readyz returns the status code and body of addr's /readyz; 0 if it does
// not answer.
func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz") //nolint:noctx // a test's one-off request
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// slotsOf returns the slots a replica reports on /readyz, and whether it
// is ready.
func slotsOf(addr string) (int, bool) {
	code, body := readyz(addr)
	m := slotsLine.FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, code == http.StatusOK
}

// holdings returns the slots the replicas ids hold between them, each
// one's as "id n (code)", and whether every one is ready.
func holdings(replicas map[string]*process, ids []string) (int, string, bool) {
	total, allReady := 0, true
	var parts []string
	for _, id := range ids {
		code, body := readyz(replicas[id].addr)
		n := 0
		if m := slotsLine.FindStringSubmatch(body); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		total += n
		allReady = allReady && code == http.StatusOK
		parts = append(parts, fmt.Sprintf("%s %d (/readyz %d)", id, n, code))
	}
	return total, strings.Join(parts, ", "), allReady
}
