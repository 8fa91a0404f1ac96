//go:build linux

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kooperkit/kooper/hack/internal/terminal"
)

// A newcomer's first Ctrl-C ends make run quietly, with status 0, and
// leaves no process or directory behind: whether the terminal interrupts
// it (make above it, as the README runs it), only run gets the signal, or
// its whole process group does.
func TestCtrlCEndsMakeRunQuietly(t *testing.T) {
	root := needBinaries(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if out, err := exec.Command("go", "build", "-o", run, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	makefile := filepath.Join(dir, "Makefile")
	if err := os.WriteFile(makefile, []byte("run:\n\t@$(RUN) -root $(ROOT)\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		// start starts the program writing to out; interrupt sends the
		// Ctrl-C; wait returns its end.
		start func(t *testing.T, out io.Writer) (interrupt func(), wait func() error)
	}{
		{name: "the terminal interrupts make run", start: func(t *testing.T, out io.Writer) (func(), func() error) {
			master, slave := openPTY(t)
			cmd := exec.Command("make", "-s", "-f", makefile, "run", "RUN="+run, "ROOT="+root)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = slave.Close()
			copied := make(chan struct{})
			go func() { _, _ = io.Copy(out, master); close(copied) }()
			interrupt := func() { _, _ = master.Write([]byte{0x03}) } // what Ctrl-C types
			wait := func() error {
				err := cmd.Wait()
				_ = master.Close()
				<-copied
				return err
			}
			return interrupt, wait
		}},
		{name: "only run is signalled", start: func(t *testing.T, out io.Writer) (func(), func() error) {
			cmd := startRun(t, run, root, out)
			return func() { _ = cmd.Process.Signal(syscall.SIGINT) }, cmd.Wait
		}},
		{name: "run's whole process group is signalled", start: func(t *testing.T, out io.Writer) (func(), func() error) {
			cmd := startRun(t, run, root, out)
			return func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }, cmd.Wait
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			interrupt, wait := tt.start(t, &out)
			waitFor(t, &out, "Ctrl-C stops everything", 120*time.Second)
			interrupt()
			done := make(chan error, 1)
			go func() { done <- wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("still running 60s after Ctrl-C:\n%s", out.String())
			}
			got := out.String()
			if err != nil {
				t.Errorf("got %v after Ctrl-C, want exit status 0:\n%s", err, got)
			}
			for _, bad := range []string{"still there", "Error", "make run:"} {
				if strings.Contains(got, bad) {
					t.Errorf("the output says %q:\n%s", bad, got)
				}
			}
			progs, err := programs(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range demoNames(progs) {
				if !strings.Contains(got, "removed the demo of "+name) {
					t.Errorf("the demo of %s was not removed:\n%s", name, got)
				}
			}
			noLeftovers(t, got)
		})
	}
}

// startRun starts run directly, in a process group of its own (as a shell
// would start a job).
func startRun(t *testing.T, run, root string, out io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(run, "-root", root)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd
}

// noLeftovers checks that the programs run started have exited and that
// the cluster's directory is gone.
func noLeftovers(t *testing.T, out string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`started (\S+) \(pid (\d+)\)`).FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[2])
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is still running", m[1], pid)
		}
	}
	m := regexp.MustCompile(`logs and certificates in (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no cluster directory in the output:\n%s", out)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster directory %s is still there", m[1])
	}
}

func waitFor(t *testing.T, out *syncBuffer, text string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !strings.Contains(out.String(), text); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %s:\n%s", text, timeout, out.String())
		}
	}
}

// openPTY opens a pseudo-terminal pair, closed when the test ends.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, slave, err := terminal.OpenPTY()
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = master.Close(); _ = slave.Close() })
	return master, slave
}
