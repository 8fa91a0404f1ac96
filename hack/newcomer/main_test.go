package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeBin makes a directory of executables with the given names.
func fakeBin(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLinkCommands(t *testing.T) {
	tests := []struct {
		name    string
		have    []string
		want    []string // linked
		wantErr string
	}{
		{name: "the required commands and the basics found", have: append(slices.Clone(required), "sh", "git", "promtool", "ip"),
			want: append(slices.Clone(required), "sh", "git")},
		{name: "gcc missing", have: []string{"go", "gofmt", "make", "as", "ld", "sh"}, wantErr: "gcc is not on this machine's PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fakeBin(t, tt.have...)
			dir := filepath.Join(t.TempDir(), "path")
			got, err := linkCommands(dir, src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("linked %v, want %v", got, tt.want)
			}
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			for _, name := range absent {
				if slices.Contains(names, name) {
					t.Errorf("%s was linked", name)
				}
			}
		})
	}
}

// The new user's PATH finds none of the absent tools, even when this
// machine's PATH has them, and the check would see one that got there.
func TestTheAbsentToolsAreNotFound(t *testing.T) {
	if lookPath("sh", os.Getenv("PATH")) == "" {
		t.Skip("no sh on this machine's PATH")
	}
	t.Setenv("PATH", os.Getenv("PATH")+string(os.PathListSeparator)+fakeBin(t, absent...))
	w := &checker{tmp: t.TempDir()}
	if err := w.environment(filepath.Join(w.tmp, "home")); err != nil {
		t.Fatalf("a tool on this machine's PATH leaked into the new user's: %v", err)
	}
	if err := os.WriteFile(filepath.Join(w.pathDir, "promtool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.checkAbsent(); err == nil || !strings.Contains(err.Error(), "promtool is on the new user's PATH") {
		t.Errorf("got %v, want an error saying promtool is on the PATH", err)
	}
}

func TestSkipped(t *testing.T) {
	tests := []struct {
		line string
		want string
	}{
		{line: "--- SKIP: TestA (0.00s)", want: "TestA"},
		{line: "    --- SKIP: TestA/sub_test (0.01s)", want: "TestA/sub_test"},
		{line: "    e2e_test.go:95: --- SKIP: TestNested (0.00s)", want: "TestNested"},
		{line: "--- PASS: TestA (0.00s)"},
		{line: "ok  \tgithub.com/kooperkit/kooper/hack/tools\t0.05s"},
	}
	for _, tt := range tests {
		got, ok := skipped(tt.line)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("skipped(%q) = %q, %v; want %q", tt.line, got, ok, tt.want)
		}
	}
}

// The first sign of an operator at work is told from make run's other
// lines as it prints them.
func TestWorkPattern(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{line: "[events] PodTerminator kooper-demo-victims: Terminated terminated 1 of 4 live pods (40%, minimum 3): kooper-demo/victim-7c745c7997-mkzsn", want: true},
		{line: "==> Tenant demo is Ready: Namespace tenant-demo, ResourceQuota tenant-quota", want: true},
		{line: "==> shop: the example operators/shop/example.yaml is Ready", want: true},
		{line: "==> created PodTerminator kooper-demo-victims: every 5s, 40% of kooper-demo's app=victim pods, never fewer than 3 left"},
		{line: "==> operators/shop/example.yaml is not Ready after 60s: see [shop] above"},
		{line: "[pod-logger] pod kooper-demo/victim-7c745c7997-r7vz9 is Running"},
	}
	for _, tt := range tests {
		if got := workPattern.MatchString(tt.line); got != tt.want {
			t.Errorf("workPattern.MatchString(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// A run that would stop for want of space is refused before it starts; a
// warm run needs less.
func TestARunWithoutRoomIsRefused(t *testing.T) {
	warm := t.TempDir()
	if err := os.WriteFile(filepath.Join(warm, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		home    string
		free    uint64
		wantErr string
	}{
		{"cold, with room", "", 30 << 30, ""},
		{"cold, without", "", 10 << 30, "has 10.0 GiB free, and this run writes about 24 GiB there"},
		{"cold in a new home, without", filepath.Join(t.TempDir(), "new", "home"), 10 << 30, "about 24 GiB"},
		{"warm, with room", warm, 10 << 30, ""},
		{"warm, without", warm, 1 << 30, "has 1.0 GiB free, and this run writes about 4 GiB there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved := freeBytes
			t.Cleanup(func() { freeBytes = saved })
			freeBytes = func(string) (uint64, error) { return tt.free, nil }
			err := checkSpace(tt.home)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want the run allowed", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}
