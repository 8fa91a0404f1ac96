package tools

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "grafana", "alerts")
	for _, d := range []string{deep, filepath.Join(root, "bin"), filepath.Join(root, "grafana", "bin", "prometheus")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(root, rel), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/promtool", 0o755)
	write("bin/prometheus", 0o755)
	write("bin/notes", 0o644)

	tests := []struct {
		name, from, cmd string
		want            string // the path found, relative to root
		wantErr         string // or a part of the error
	}{
		{name: "in the working directory's bin/", from: ".", cmd: "promtool", want: "bin/promtool"},
		{name: "in a parent's bin/", from: "grafana/alerts", cmd: "promtool", want: "bin/promtool"},
		{name: "a directory of that name is skipped", from: "grafana/alerts", cmd: "prometheus", want: "bin/prometheus"},
		{name: "a file that is not executable is no command", from: ".", cmd: "notes", wantErr: "build it into the repository's bin/"},
		{name: "missing: the error names the make target", from: "grafana", cmd: "promtool-x", wantErr: "no bin/promtool-x in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := find(filepath.Join(root, tt.from), tt.cmd)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want ErrMissing saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != filepath.Join(root, tt.want) {
				t.Fatalf("got %q, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestAMissingToolNamesItsMakeTarget(t *testing.T) {
	_, err := find(t.TempDir(), "promtool")
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "run `make prometheus` (make test does)") {
		t.Fatalf("got %v, want ErrMissing naming make prometheus", err)
	}
}

// progress.sh leaves no process behind, whether its command ends or Ctrl-C
// stops it: its heartbeat's sleep ends with it, not up to 30 s later (make
// run's Ctrl-C found one). The script runs in a process group of its own;
// once it has exited, no process of that group may be left.
func TestProgressLeavesNoProcessBehind(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads process groups from /proc")
	}
	for _, tc := range []struct {
		name      string
		command   []string
		interrupt bool
	}{
		{name: "the command ends", command: []string{"sleep", "0.2"}},
		{name: "Ctrl-C", command: []string{"sleep", "20"}, interrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("bash", append([]string{"progress.sh", "test"}, tc.command...)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			if tc.interrupt {
				// What a terminal's Ctrl-C does: SIGINT to the whole group,
				// once the heartbeat is asleep.
				time.Sleep(500 * time.Millisecond)
				if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			if !tc.interrupt && err != nil {
				t.Fatalf("progress.sh: %v", err)
			}
			// A process killed a moment ago may not be reaped yet.
			deadline := time.Now().Add(5 * time.Second)
			for {
				left := processesOfGroup(t, pgid)
				if len(left) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("processes of progress.sh's group %d still running 5s after it exited: %s", pgid, strings.Join(left, "; "))
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// processesOfGroup returns "pid command" of the live processes in process
// group pgid.
func processesOfGroup(t *testing.T, pgid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split
		// after its closing parenthesis.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[end+1:])
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			left = append(left, fmt.Sprintf("%d %s", pid, s[strings.IndexByte(s, '(')+1:end]))
		}
	}
	return left
}
