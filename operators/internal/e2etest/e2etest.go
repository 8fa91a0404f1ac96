// Package e2etest holds the helpers the operators' end-to-end tests
// use against the local control plane: run an operator in the background,
// act as its ServiceAccount, apply manifests, wait, read metrics, and check
// that its metrics over HTTPS are served to Prometheus's ServiceAccount only
// (CheckSecureMetrics).
package e2etest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/hack/tools"
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
		Groups:   serviceAccountGroups(namespace),
	}
	c.QPS, c.Burst = qps, burst
	return c
}

// SlowWatches returns a copy of cfg whose watches of resource (its
// plural, "tenants") hand on what they read d late: the cache of that
// kind lags the API server by d, as behind a busy API server or a slow
// network, while the other caches keep up. A handler that writes its
// object's status and its children then sees its children's events queue
// the object again before its own cache has seen the status it wrote: the
// case controller.TrackWrites holds a key for, made certain.
func SlowWatches(cfg *rest.Config, resource string, d time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return slowWatches{next: next, resource: resource, delay: d}
	})
	return c
}

type slowWatches struct {
	next     http.RoundTripper
	resource string
	delay    time.Duration
}

func (s slowWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := s.next.RoundTrip(req)
	q := req.URL.Query().Get("watch")
	if err != nil || req.Method != http.MethodGet || (q != "true" && q != "1") || path.Base(req.URL.Path) != s.resource {
		return res, err
	}
	res.Body = &slowBody{ReadCloser: res.Body, ctx: req.Context(), delay: s.delay}
	return res, nil
}

// slowBody hands on each read d after it returned, or at once when its
// request's context is done.
type slowBody struct {
	io.ReadCloser
	ctx   context.Context
	delay time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		t := time.NewTimer(b.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-b.ctx.Done():
		}
	}
	return n, err
}

// Requests counts the requests of the clients built from its Config, by
// verb and resource ("LIST pods", "POST pods/eviction", "PUT
// podterminators/status"): what an operator asks of the API server.
type Requests struct {
	mu sync.Mutex
	n  map[string]int
}

// CountRequests returns a copy of cfg whose clients' requests are counted
// in the Requests returned.
func CountRequests(cfg *rest.Config) (*rest.Config, *Requests) {
	r := &Requests{n: map[string]int{}}
	c := rest.CopyConfig(cfg)
	c.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			r.add(requestKind(req))
			return next.RoundTrip(req)
		})
	})
	return c, r
}

// Counts returns the counts so far.
func (r *Requests) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

func (r *Requests) add(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[kind]++
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// requestKind is a request's verb and resource: GET is LIST or WATCH on
// a collection, the resource is followed by its subresource if any.
// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]], or the same under
// /apis/GROUP/VERSION; other paths are counted by method and path.
func requestKind(req *http.Request) string {
	seg := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		seg = seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		seg = seg[3:]
	default:
		return req.Method + " " + req.URL.Path
	}
	namespaceOwn := len(seg) == 3 && (seg[2] == "status" || seg[2] == "finalize") // a namespace's subresource
	if len(seg) >= 3 && seg[0] == "namespaces" && !namespaceOwn {
		seg = seg[2:]
	}
	verb, resource := req.Method, seg[0]
	switch {
	case verb == http.MethodGet && len(seg) == 1 && (req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1"):
		verb = "WATCH"
	case verb == http.MethodGet && len(seg) == 1:
		verb = "LIST"
	}
	if len(seg) >= 3 {
		resource += "/" + seg[2]
	}
	return verb + " " + resource
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
// `promtool check metrics` reports any problem. promtool is the pinned one
// `make prometheus` links into the repository's bin/ (make test builds it
// first); without it the test fails, naming that target.
func CheckMetrics(t testing.TB, url string) {
	t.Helper()
	promtool, err := tools.Path("promtool")
	if err != nil {
		t.Fatal(err)
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

// Scrape reads what url (an operator's /metrics) serves, in Prometheus's
// text format, as a Gatherer for Metric: the metrics as Prometheus sees
// them, read once.
func Scrape(t testing.TB, url string) prom.Gatherer {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %.200q", url, resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	all := slices.Collect(maps.Values(families))
	return prom.GathererFunc(func() ([]*dto.MetricFamily, error) { return all, nil })
}

// cacheWait is the histogram of the times a controller held a key until
// its caches had seen what the key's handler wrote (controller.TrackWrites).
const cacheWait = "kooper_controller_cache_wait_seconds"

// CheckCacheWaits polls url (an operator's /metrics, every 100ms) until
// the controller named controller has held a key at least once for its
// caches to see its handler's own writes (cacheWait's count, over
// caught_up), and fails the test if it has not within timeout, or if the
// histogram has no series of the controller (its clients are not built
// from a TrackWrites config, or it has had no event). It logs the counts
// by caught_up: true, the caches saw the writes; false, the wait reached
// its bound and the key was handled anyway. With timeout 0 it reads once
// and requires only the series: a key waits only if it comes out of the
// queue in the moment between its handling's last write and that write's
// event, which a small workload may never give.
func CheckCacheWaits(t testing.TB, url, controller string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		g := Scrape(t, url)
		families, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(families, func(f *dto.MetricFamily) bool {
			return f.GetName() == cacheWait && slices.ContainsFunc(f.GetMetric(), func(m *dto.Metric) bool {
				return slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "controller" && l.GetValue() == controller })
			})
		}) {
			t.Fatalf("%s has no series of controller %q at %s", cacheWait, controller, url)
		}
		counts := map[string]float64{}
		for _, caughtUp := range []string{"true", "false"} {
			counts[caughtUp] = Metric(t, g, cacheWait, map[string]string{"controller": controller, "caught_up": caughtUp})
		}
		summary := fmt.Sprintf("%s_count{controller=%q}: caught_up=\"true\" %v, caught_up=\"false\" %v", cacheWait, controller, counts["true"], counts["false"])
		if timeout == 0 {
			t.Logf("%s (not required above zero here)", summary)
			return
		}
		if counts["true"]+counts["false"] > 0 {
			t.Logf("%s: keys that waited for the caches to see their handlings' own writes", summary)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s after %s: no key waited for the caches to see its handlings' own writes, want at least one", summary, timeout)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mainArgsEnv carries the command line of a test binary that RunMain starts
// as the program itself, one argument per line.
const mainArgsEnv = "KOOPER_E2ETEST_MAIN_ARGS"

// MainIfAsked runs main with the command line RunMain gave and exits 0 if
// main returns, when this test binary was started by RunMain; otherwise it
// does nothing. Call it first in TestMain.
func MainIfAsked(main func()) {
	args, ok := os.LookupEnv(mainArgsEnv)
	if !ok {
		return
	}
	os.Args = os.Args[:1]
	if args != "" {
		os.Args = append(os.Args, strings.Split(args, "\n")...)
	}
	main()
	os.Exit(0)
}

// RunMain runs the package's main with args in a new process (the test
// binary, whose TestMain calls MainIfAsked) and returns what it printed and
// its exit status: the program as a user's shell sees it.
func RunMain(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(args, "\n"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatalf("could not run %v: %v", args, err)
	}
	return out.String(), errOut.String(), status
}

// CheckCommandLine checks a sample program's command line the way a shell
// sees it, through RunMain: -h prints only the usage and succeeds, a
// command-line mistake exits 2 with one line saying what is wrong and the
// usage, any other error exits 1 with one line "name: error". The program
// must take -log-level and -log-format (text or json).
func CheckCommandLine(t *testing.T, name string) {
	t.Helper()
	tests := []struct {
		name       string
		args       []string
		wantStatus int
		wantLines  []string // each a whole line of stderr
		wantNot    string   // never in stderr
	}{
		{name: "-h", args: []string{"-h"}, wantStatus: 0, wantLines: []string{"Usage of " + name + ":"}, wantNot: "help requested"},
		{name: "-help", args: []string{"-help"}, wantStatus: 0, wantLines: []string{"Usage of " + name + ":"}, wantNot: "help requested"},
		{name: "an unknown flag", args: []string{"-no-such-flag"}, wantStatus: 2,
			wantLines: []string{"flag provided but not defined: -no-such-flag", "Usage of " + name + ":"}, wantNot: name + ": flag provided"},
		{name: "a flag without its value", args: []string{"-log-level"}, wantStatus: 2,
			wantLines: []string{"flag needs an argument: -log-level", "Usage of " + name + ":"}},
		{name: "a bad value", args: []string{"-log-format", "xml"}, wantStatus: 1,
			wantLines: []string{name + `: -log-format must be "text" or "json", got "xml"`}, wantNot: "Usage of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, status := RunMain(t, tt.args...)
			if status != tt.wantStatus {
				t.Errorf("got exit status %d, want %d", status, tt.wantStatus)
			}
			if stdout != "" {
				t.Errorf("got stdout %q, want nothing", stdout)
			}
			lines := strings.Split(stderr, "\n")
			for _, want := range tt.wantLines {
				if !slices.Contains(lines, want) {
					t.Errorf("stderr has no line %q:\n%s", want, stderr)
				}
			}
			if tt.wantNot != "" && strings.Contains(stderr, tt.wantNot) {
				t.Errorf("stderr says %q:\n%s", tt.wantNot, stderr)
			}
		})
	}
}
