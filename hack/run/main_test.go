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
// starts; without them it skips, or fails under CI.
func needBinaries(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("../..")
	for _, bin := range []string{devcluster.BinAPIServer, devcluster.BinKwok, devcluster.BinScheduler, "pod-logger", "pod-terminator", "multi-resource"} {
		if _, err := os.Stat(filepath.Join(root, "bin", bin)); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("bin/%s is missing: make test builds it (make controlplane WITH_KWOK=1 build)", bin)
			}
			t.Skipf("bin/%s is missing: run make controlplane WITH_KWOK=1 build", bin)
		}
	}
	return root
}
