package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second start, while a dev cluster holds the pid file's lock, fails
// before it starts anything, naming the running PID and how to stop it.
func TestASecondStartFailsWhileOneRuns(t *testing.T) {
	dir := t.TempDir()
	fd, err := lockPID(filepath.Join(dir, pidFile)) // this test plays the running one
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Close(fd) }()

	var out bytes.Buffer
	err = run(context.Background(), []string{"-root", "../..", "-dir", dir}, &out)
	want := fmt.Sprintf("a dev cluster is already running (pid %d, kubeconfig %s): use it, or stop it with make devcluster-stop",
		os.Getpid(), filepath.Join(dir, kubeconfigFile))
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if out.Len() > 0 {
		t.Errorf("got output %q, want none: nothing may start", out.String())
	}
	if got := readPID(fd); got != os.Getpid() {
		t.Errorf("got pid %d in the pid file, want the running one's %d", got, os.Getpid())
	}
}

// A pid file whose process is gone, killed or its PID reused since, does
// not block a new start: the lock went with the process.
func TestAStalePIDFileIsTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), pidFile)
	if err := os.WriteFile(path, []byte("123456789\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := lockPID(path)
	if err != nil {
		t.Fatalf("got %v, want the stale pid file taken over", err)
	}
	defer func() { _ = syscall.Close(fd) }()
	if got := readPID(fd); got != os.Getpid() {
		t.Errorf("got pid %d in the pid file, want %d", got, os.Getpid())
	}
}

// make devcluster-stop with no dev cluster running says so, succeeds, and
// signals nobody, not even a process that now has the PID a killed run
// left in its file.
func TestStopWithNothingRunningSaysSo(t *testing.T) {
	tests := []struct {
		name    string
		pidFile bool
		want    string
	}{
		{name: "no pid file", want: "==> no dev cluster is running (no "},
		{name: "a pid file left by a killed run, its PID reused", pidFile: true,
			want: "==> no dev cluster is running (" + pidFile + " is left from a run that was killed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			other := exec.Command("sleep", "60")
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = other.Wait(); close(exited) }()
			t.Cleanup(func() { _ = other.Process.Kill(); <-exited })
			if tt.pidFile {
				if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			var out bytes.Buffer
			if err := run(context.Background(), []string{"-dir", dir, "-stop"}, &out); err != nil {
				t.Fatalf("got %v, want success", err)
			}
			got := strings.ReplaceAll(out.String(), dir+string(os.PathSeparator), "")
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			select {
			case <-exited:
				t.Errorf("pid %d, not a dev cluster, was stopped", other.Process.Pid)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}
