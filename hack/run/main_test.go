package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/kooperkit/kooper/kooper/devcluster"
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

// `make run` starts the control plane with kwok nodes, runs the sample
// programs and the demo, and stops cleanly.
func TestMakeRunShowsTheSampleProgramsAtWork(t *testing.T) {
	root := needBinaries(t)
	var out syncBuffer
	if err := run(context.Background(), []string{"-root", root, "-duration", "30s"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`kube-apiserver v1\.[0-9]+\.[0-9]+ ready`), // stamped with its version
		regexp.MustCompile(`\[pod-logger\] pod kooper-demo/victim-\S+ is Running`),
		regexp.MustCompile(`scaled kooper-demo/victim to 5 replicas`),
		regexp.MustCompile(`\[events\] PodTerminator kooper-demo-victims: Terminated terminated [12] of [45] live pods \(40%, minimum 3\): kooper-demo/victim-`),
		regexp.MustCompile(`deleted PodTerminator kooper-demo-victims`),
		regexp.MustCompile(`Tenant demo is Ready: Namespace tenant-demo, ResourceQuota tenant-quota, LimitRange tenant-limits, RoleBinding tenant-admins, NetworkPolicy tenant-default-deny`),
		// The sharded replicas share the pods: some replica prints each.
		regexp.MustCompile(`\[pod-sharding-[123]\] pod kooper-demo/victim-\S+ is \S+ \(slot \d+\)`),
		regexp.MustCompile(`\[pod-sharding-[123]\] .*msg="slots owned" count=1[01] `),
		regexp.MustCompile(`stopping the local control plane`),
	} {
		if !want.MatchString(got) {
			t.Errorf("output does not match %q:\n%s", want, tail(got, 40))
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
	for _, bin := range []string{devcluster.BinAPIServer, devcluster.BinKwok, devcluster.BinScheduler, "pod-logger", "pod-terminator", "multi-resource", "pod-sharding"} {
		if _, err := os.Stat(filepath.Join(root, "bin", bin)); err != nil {
			t.Fatalf("bin/%s is missing: make test builds it (make controlplane WITH_KWOK=1 build)", bin)
		}
	}
	return root
}

// make run starts the samples with their own flags, then every other
// operator of the repository with the flags a scaffolded operator has, each
// on a port of its own, and its example.
func TestMakeRunStartsEveryOperator(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{
		"operators/pod-terminator/cmd/pod-terminator",
		"operators/multi-resource/cmd/multi-resource",
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
		"pod-terminator -http-addr 127.0.0.1:8081 -leader-elect=false -webhook-addr= -namespace kooper-pod-terminator ",
		"multi-resource -http-addr 127.0.0.1:8082 -leader-elect=false ",
		"pod-sharding-1 -identity pod-sharding-1 -metrics-addr 127.0.0.1:8181 ",
		"pod-sharding-2 -identity pod-sharding-2 -metrics-addr 127.0.0.1:8182 ",
		"pod-sharding-3 -identity pod-sharding-3 -metrics-addr 127.0.0.1:8183 ",
		"shop -http-addr 127.0.0.1:8083 -leader-elect=false operators/shop/example.yaml",
		"web-demo -http-addr 127.0.0.1:8084 -leader-elect=false operators/web-demo/example.yaml",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got programs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
