package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
)

// margin is how much longer the parent waits for a child's message than
// the child's own bound, so that the child reports its own timeout.
const margin = 30 * time.Second

// run runs impl's scenario in a fresh child process, churning updates pods
// in a Single one, and returns what it measured, or why it failed.
func (r *runner) run(ctx context.Context, impl, scenario string, round, updates int) Record {
	run := Record{Impl: impl, Scenario: scenario, Round: round}
	r.runs++
	args := child.Args{
		Impl:         impl,
		Scenario:     scenario,
		Kubeconfig:   r.kubeconfig,
		Pods:         r.o.Pods,
		Token:        fmt.Sprintf("run-%04d", r.runs%10000), // as wide as pods.SeedToken
		HandlerDelay: r.o.HandlerDelay,
		Timeout:      r.o.Timeout,
		StopTimeout:  r.o.StopTimeout,
	}
	if scenario == child.Single {
		args.Updates = updates
	}
	select {
	case <-time.After(r.o.Settle):
	case <-ctx.Done():
	}
	if err := r.converse(ctx, args, &run); err != nil {
		run.Err = err.Error()
	}
	return run
}

// converse starts the child, follows its messages (churning when it is
// ready), asks it to stop, and requires a clean exit.
func (r *runner) converse(ctx context.Context, args child.Args, run *Record) (err error) {
	c, err := r.startChild(ctx, args)
	if err != nil {
		return err
	}
	defer func() { run.TotalCPU, err = c.end(err) }()

	m, err := c.next(r.o.Timeout + margin)
	if err != nil {
		return fmt.Errorf("waiting for the sync: %w", err)
	}
	if run.Sync = m.Synced; run.Sync == nil {
		return fmt.Errorf("got %+v, want the sync", m)
	}
	if args.Updates > 0 {
		if run.ChurnSend, err = pods.Churn(ctx, r.client, Namespace, args.Updates, r.o.ChurnWriters, args.Token); err != nil {
			return err
		}
		if m, err = c.next(r.o.Timeout + margin); err != nil {
			return fmt.Errorf("waiting for the churn: %w", err)
		}
		if run.Churn = m.Churned; run.Churn == nil {
			return fmt.Errorf("got %+v, want the churn", m)
		}
	}
	run.Stop, err = c.stop(r.o.StopTimeout)
	return err
}

// childProc is a running child process and its messages.
type childProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tail
	msgs    chan child.Message
	abandon chan struct{}
	reader  sync.WaitGroup
	killed  bool
}

// startChild starts a child for args. The caller must call end.
func (r *runner) startChild(ctx context.Context, args child.Args) (*childProc, error) {
	cmd := exec.CommandContext(ctx, r.o.Exe, args.CommandLine()...)
	// Interrupted: ask the child to stop, then kill it if it does not.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = r.o.StopTimeout
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("could not open the child's stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("could not open the child's stdout: %w", err)
	}
	c := &childProc{cmd: cmd, stdin: stdin, stderr: &tail{max: 4096}, msgs: make(chan child.Message), abandon: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("could not start the child: %w", err)
	}
	c.reader.Go(func() {
		defer close(c.msgs)
		s := bufio.NewScanner(stdout)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			var m child.Message
			if json.Unmarshal(s.Bytes(), &m) != nil {
				_, _ = c.stderr.Write(append(s.Bytes(), '\n')) // not ours: keep it for the error
				continue
			}
			select {
			case c.msgs <- m:
			case <-c.abandon:
				return
			}
		}
	})
	return c, nil
}

// next returns the child's next message (see the function next).
func (c *childProc) next(d time.Duration) (child.Message, error) { return next(c.msgs, d) }

// stop asks the child to stop (closes its stdin), requires its Stopped
// message within d (plus margin) and then its exit.
func (c *childProc) stop(d time.Duration) (*child.Stop, error) {
	if err := c.stdin.Close(); err != nil {
		return nil, fmt.Errorf("could not ask the child to stop: %w", err)
	}
	m, err := c.next(d + margin)
	if err != nil {
		return nil, fmt.Errorf("waiting for the stop: %w", err)
	}
	if m.Stopped == nil {
		return nil, fmt.Errorf("got %+v, want the stop", m)
	}
	// The child must now exit on its own.
	select {
	case _, open := <-c.msgs:
		if open {
			return nil, errors.New("the child wrote after it stopped")
		}
	case <-time.After(margin):
		return nil, fmt.Errorf("the child did not exit within %s of stopping", margin)
	}
	return m.Stopped, nil
}

// kill sends the child SIGKILL.
func (c *childProc) kill() error {
	c.killed = true
	if err := c.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("could not kill the child: %w", err)
	}
	return nil
}

// end reaps the child, killing it first if err (the conversation's
// outcome) is not nil, and returns the child's CPU and err, or the exit's
// error for a child that was not killed, with the tail of its stderr.
func (c *childProc) end(err error) (time.Duration, error) {
	// On failure, kill the child; either way let the reader finish before
	// Wait, as exec requires.
	if err != nil {
		_ = c.cmd.Process.Kill()
	}
	close(c.abandon)
	c.reader.Wait()
	waitErr := c.cmd.Wait()
	var cpu time.Duration
	if c.cmd.ProcessState != nil {
		cpu = c.cmd.ProcessState.UserTime() + c.cmd.ProcessState.SystemTime()
	}
	if err == nil && waitErr != nil && !c.killed {
		err = fmt.Errorf("the child exited badly: %w", waitErr)
	}
	if err != nil && c.stderr.Len() > 0 {
		err = fmt.Errorf("%w; child stderr: %s", err, strings.TrimSpace(c.stderr.String()))
	}
	return cpu, err
}

// next returns the child's next message: an error if it reported one,
// exited, or said nothing within d.
func next(msgs <-chan child.Message, d time.Duration) (child.Message, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case m, open := <-msgs:
		if !open {
			return child.Message{}, errors.New("the child exited")
		}
		if m.Error != "" {
			return child.Message{}, fmt.Errorf("the child failed: %s", m.Error)
		}
		return m, nil
	case <-timer.C:
		return child.Message{}, fmt.Errorf("the child said nothing for %s", d)
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}

func (t *tail) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.Len()
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
