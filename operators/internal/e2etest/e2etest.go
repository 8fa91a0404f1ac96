// Package e2etest holds the helpers both sample operators' end-to-end tests
// use against the local control plane: run an operator in the background,
// act as its ServiceAccount, apply manifests, wait, and read metrics.
package e2etest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// Run runs run in the background until the test ends, then cancels its
// context and fails the test if it returned an error or did not return
// within 20 seconds.
func Run(t testing.TB, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("run did not return 20s after its context was cancelled")
		}
	})
}

// AsServiceAccount returns cfg impersonating the ServiceAccount
// namespace/name with its groups, at the given client rate limits.
func AsServiceAccount(cfg *rest.Config, namespace, name string, qps float32, burst int) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	c.QPS, c.Burst = qps, burst
	return c
}

// Eventually polls cond every 50ms until it holds, or fails the test after
// timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Metric adds up the series of family name whose labels include labels:
// counter and gauge values, and histogram sample counts.
func Metric(t testing.TB, g prom.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// FreeAddr returns a 127.0.0.1 address with a port free at the time of the
// call and never returned before in this process. The kernel may hand a
// just-closed ephemeral port out again at once, so without that memory two
// calls in a row (a webhook's and a metrics server's address) can return the
// same port, and the second server then fails to listen.
func FreeAddr(t testing.TB) string {
	t.Helper()
	given.Lock()
	defer given.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if !given.addrs[addr] {
			given.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("no free port that was not handed out before in 100 tries")
	return ""
}

// given remembers the addresses FreeAddr returned in this process.
var given = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// CheckMetrics scrapes url (an operator's /metrics) and fails the test if
// `promtool check metrics` (Debian's prometheus package, which .ci/run
// installs) reports any problem. Without promtool the test is skipped,
// except in CI.
func CheckMetrics(t testing.TB, url string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing: .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool is missing: apt-get install prometheus")
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on %s: %v\n%s", url, err, out)
	}
}
