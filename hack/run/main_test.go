package main

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/kooperkit/kooper/hack/envtest"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writers of run.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `make run` starts the control plane with kwok nodes, runs the example
// programs, the operators and their demos, and stops cleanly.
func TestMakeRunShowsTheProgramsAtWork(t *testing.T) {
	root := needBinaries(t)
	var out syncBuffer
	if err := run(context.Background(), []string{"-root", root, "-duration", "30s"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	want := []*regexp.Regexp{
		regexp.MustCompile(`kube-apiserver v1\.[0-9]+\.[0-9]+ ready`), // stamped with its version
		regexp.MustCompile(`\[pod-logger\] pod kooper-demo/victim-\S+ is Running`),
		regexp.MustCompile(`scaled kooper-demo/victim to 5 replicas`),
		// The sharded replicas share the pods: some replica prints each.
		regexp.MustCompile(`\[pod-sharding-[123]\] pod kooper-demo/victim-\S+ is \S+ \(slot \d+\)`),
		regexp.MustCompile(`\[pod-sharding-[123]\] .*msg="slots owned" count=1[01] `),
		regexp.MustCompile(`stopping the local control plane`),
	}
	progs, err := programs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range demoNames(progs) {
		want = append(want, demos[name].shows...)
		want = append(want, regexp.MustCompile(`removed the demo of `+regexp.QuoteMeta(name)))
	}
	for _, p := range progs {
		if p.example != "" {
			want = append(want, regexp.MustCompile(regexp.QuoteMeta(p.name+": the example "+p.example+" is Ready")))
		}
	}
	for _, w := range want {
		if !w.MatchString(got) {
			t.Errorf("output does not match %q:\n%s", w, tail(got, 40))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// needBinaries returns the repository root once bin/ holds what make run
// starts. A missing one fails the test rather than skipping it: make test
// builds them all first, so only a broken build can leave one out.
func needBinaries(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("../..")
	progs, err := programs(root)
	if err != nil {
		t.Fatal(err)
	}
	bins := []string{envtest.BinAPIServer, envtest.BinKwok, envtest.BinScheduler}
	for _, p := range progs {
		bins = append(bins, cmp.Or(p.bin, p.name))
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(root, "bin", bin)); err != nil {
			t.Fatalf("bin/%s is missing: make test builds it (make controlplane WITH_KWOK=1 build)", bin)
		}
	}
	return root
}

// make run starts the example programs, then each operator: one with a
// demo with the demo's port and flags, any other with the flags every
// scaffolded operator has, each on a port of its own from 8083, and its
// example.
func TestMakeRunStartsEveryOperator(t *testing.T) {
	saved := demos
	t.Cleanup(func() { demos = saved })
	demos = map[string]demo{"bank": {port: 8090, args: []string{"-leader-elect=false", "-audit"}}}
	root := t.TempDir()
	for _, dir := range []string{
		"operators/bank/cmd/bank",
		"operators/web-demo/cmd/web-demo",
		"operators/shop/cmd/shop",
		"operators/internal/cli",     // no command: not an operator
		"operators/half-done/cmd/hd", // its command is not named for it
	} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	progs, err := programs(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range progs {
		got = append(got, p.name+" "+strings.Join(p.args, " ")+" "+p.example)
	}
	want := []string{
		"pod-logger -metrics-addr 127.0.0.1:8180 ",
		"pod-sharding-1 -identity pod-sharding-1 -metrics-addr 127.0.0.1:8181 ",
		"pod-sharding-2 -identity pod-sharding-2 -metrics-addr 127.0.0.1:8182 ",
		"pod-sharding-3 -identity pod-sharding-3 -metrics-addr 127.0.0.1:8183 ",
		"bank -http-addr 127.0.0.1:8090 -leader-elect=false -audit ",
		"shop -http-addr 127.0.0.1:8083 -leader-elect=false operators/shop/example.yaml",
		"web-demo -http-addr 127.0.0.1:8084 -leader-elect=false operators/web-demo/example.yaml",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got programs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every demo is on a port of its own, below the ports of the operators
// without one.
func TestTheDemosPortsDiffer(t *testing.T) {
	seen := map[int]string{}
	for name, d := range demos {
		if other, ok := seen[d.port]; ok {
			t.Errorf("the demos of %s and %s have port %d: want one each", name, other, d.port)
		}
		if d.port <= 8080 || d.port >= firstFreePort {
			t.Errorf("the demo of %s has port %d: want one from 8081 to %d (8080 is the pod-logger's default)", name, d.port, firstFreePort-1)
		}
		seen[d.port] = name
	}
}
