package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kooperkit/kooper/hack/tools"
)

// repoRoot is the repository, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// build compiles the packages (paths relative to dir) into a temporary
// directory and returns it.
func build(t *testing.T, dir string, pkgs ...string) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("go", append([]string{"build", "-o", out + string(os.PathSeparator)}, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, b)
	}
	return out
}

// freeAddr returns a free 127.0.0.1 address never returned before in this
// process: the kernel may hand a just-closed port out again at once, and two
// operators given one port would collide.
func freeAddr(t *testing.T) string {
	t.Helper()
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		if !given[addr] {
			given[addr] = true
			return addr
		}
	}
	t.Fatal("no free port that was not handed out before in 100 tries")
	return ""
}

var (
	givenMu sync.Mutex
	given   = map[string]bool{}
)

// process is a started command whose output goes to a log (shown when the
// test fails) and which is stopped at cleanup.
type process struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// start starts bin with args and stops it (SIGTERM, then SIGKILL after 10s)
// when the test ends, logging its output if the test failed.
func start(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...)}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("--- %s output (last 4000 bytes):\n%s", name, tail(p.output(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// eventually polls cond every 200ms until it returns nil, or fails the test
// after timeout with cond's last error.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s: %v", timeout, what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// get returns the body of a 200 response to GET u.
func get(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// sample is one series of an instant query's result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// prometheus is a Prometheus server's HTTP API.
type prometheus struct{ url string }

// query runs an instant query and returns its series, or an error if
// Prometheus refused it (a parse error, say).
func (p prometheus) query(ctx context.Context, q string) ([]sample, error) {
	body, err := get(ctx, p.url+"/api/v1/query?"+url.Values{"query": {q}}.Encode())
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if jsonErr := json.Unmarshal([]byte(body), &r); jsonErr != nil {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("query %q: %w", q, jsonErr)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: got a %s, want a vector", q, r.Data.ResultType)
	}
	return r.Data.Result, nil
}

// value is the first series' value, or an error if there is none.
func (p prometheus) value(ctx context.Context, q string) (float64, error) {
	s, err := p.query(ctx, q)
	if err != nil {
		return 0, err
	}
	if len(s) == 0 {
		return 0, fmt.Errorf("%s: no series", q)
	}
	str, _ := s[0].Value[1].(string)
	var v float64
	if _, err := fmt.Sscan(str, &v); err != nil {
		return 0, fmt.Errorf("%s: value %q: %w", q, str, err)
	}
	return v, nil
}

// startPrometheus writes a configuration scraping targets (job name to
// address) every second with the rule files loaded, starts Prometheus and
// waits until it is ready.
func startPrometheus(t *testing.T, targets map[string]string, ruleFiles ...string) prometheus {
	t.Helper()
	bin, err := tools.Path("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n")
	cfg.WriteString("rule_files:\n")
	for _, f := range ruleFiles {
		fmt.Fprintf(&cfg, "  - %q\n", f)
	}
	cfg.WriteString("scrape_configs:\n")
	for job, addr := range targets {
		fmt.Fprintf(&cfg, "  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, addr)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	start(t, "prometheus", bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	p := prometheus{url: "http://" + addr}
	eventually(t, 30*time.Second, "Prometheus is ready", func() error {
		_, err := get(context.Background(), p.url+"/-/ready")
		return err
	})
	return p
}

// families parses a /metrics page into family name -> type (lower case).
func families(text string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}
