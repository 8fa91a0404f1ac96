package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	cmd := exec.CommandContext(ctx, r.o.Exe, args.CommandLine()...)
	// Interrupted: ask the child to stop, then kill it if it does not.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = r.o.StopTimeout
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("could not open the child's stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("could not open the child's stdout: %w", err)
	}
	stderr := &tail{max: 4096}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not start the child: %w", err)
	}

	msgs := make(chan child.Message)
	abandon := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		defer close(msgs)
		s := bufio.NewScanner(stdout)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			var m child.Message
			if json.Unmarshal(s.Bytes(), &m) != nil {
				_, _ = stderr.Write(append(s.Bytes(), '\n')) // not ours: keep it for the error
				continue
			}
			select {
			case msgs <- m:
			case <-abandon:
				return
			}
		}
	})
	defer func() {
		// On failure, kill the child; either way let the reader finish
		// before Wait, as exec requires.
		if err != nil {
			_ = cmd.Process.Kill()
		}
		close(abandon)
		reader.Wait()
		waitErr := cmd.Wait()
		if cmd.ProcessState != nil {
			run.TotalCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if err == nil && waitErr != nil {
			err = fmt.Errorf("the child exited badly: %w", waitErr)
		}
		if err != nil && stderr.Len() > 0 {
			err = fmt.Errorf("%w; child stderr: %s", err, strings.TrimSpace(stderr.String()))
		}
	}()

	m, err := next(msgs, r.o.Timeout+margin)
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
		if m, err = next(msgs, r.o.Timeout+margin); err != nil {
			return fmt.Errorf("waiting for the churn: %w", err)
		}
		if run.Churn = m.Churned; run.Churn == nil {
			return fmt.Errorf("got %+v, want the churn", m)
		}
	}
	if err := stdin.Close(); err != nil {
		return fmt.Errorf("could not ask the child to stop: %w", err)
	}
	if m, err = next(msgs, r.o.StopTimeout+margin); err != nil {
		return fmt.Errorf("waiting for the stop: %w", err)
	}
	if run.Stop = m.Stopped; run.Stop == nil {
		return fmt.Errorf("got %+v, want the stop", m)
	}
	// The child must now exit on its own.
	select {
	case _, open := <-msgs:
		if open {
			return errors.New("the child wrote after it stopped")
		}
	case <-time.After(margin):
		return fmt.Errorf("the child did not exit within %s of stopping", margin)
	}
	return nil
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
