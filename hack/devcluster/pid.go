package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The pid file holds the PID of the running dev cluster, and that process
// holds an exclusive flock on it for as long as it lives. The lock, not the
// file, says that a dev cluster runs: the kernel drops it when the process
// ends, however it ends, so a file left by a killed run blocks nothing, and
// a PID that another process has reused since is never signalled.

// stopTimeout bounds how long stopRunning waits for the dev cluster to exit.
// The cluster stops its five processes one by one, each with SIGTERM, then
// SIGKILL after 10s: 50s at worst.
const stopTimeout = 90 * time.Second

// runningError is lockPID's error when another process holds the lock.
type runningError struct {
	pid int // 0 if it has not written its PID yet
}

func (e *runningError) Error() string { return fmt.Sprintf("pid %d holds the lock", e.pid) }

// lockPID opens or creates path, locks it and writes this process's PID in
// it. It returns the raw descriptor, not an *os.File whose finalizer could
// close it: the lock holds until the descriptor is closed, or the process
// exits.
func lockPID(path string) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return -1, fmt.Errorf("could not open %s: %w", path, err)
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := readPID(fd)
		_ = syscall.Close(fd)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return -1, &runningError{pid: pid}
		}
		return -1, fmt.Errorf("could not lock %s: %w", path, err)
	}
	if err := syscall.Ftruncate(fd, 0); err != nil {
		_ = syscall.Close(fd)
		return -1, fmt.Errorf("could not write %s: %w", path, err)
	}
	if _, err := syscall.Pwrite(fd, []byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		_ = syscall.Close(fd)
		return -1, fmt.Errorf("could not write %s: %w", path, err)
	}
	return fd, nil
}

// locked reports whether another open file holds a lock on fd's file.
func locked(fd int) (bool, error) {
	err := syscall.Flock(fd, syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("could not check the lock: %w", err)
	}
	_ = syscall.Flock(fd, syscall.LOCK_UN)
	return false, nil
}

// readPID returns the PID in fd's file, or 0.
func readPID(fd int) int {
	b := make([]byte, 32)
	n, err := syscall.Pread(fd, b, 0)
	if err != nil || n <= 0 {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}

// stopRunning sends SIGTERM to the dev cluster whose pid file is in dir and
// waits until it has exited, which is when its lock goes: it removes its
// pid file first, so the wait is on the file opened here, not on the path.
// With no dev cluster running it says so and succeeds.
func stopRunning(ctx context.Context, dir string, say func(string, ...any)) error {
	path := filepath.Join(dir, pidFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		say("no dev cluster is running (no %s)", path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("could not open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	held, err := locked(int(f.Fd()))
	if err != nil {
		return err
	}
	if !held {
		say("no dev cluster is running (%s is left from a run that was killed)", path)
		return nil
	}
	pid := readPID(int(f.Fd()))
	if pid <= 0 {
		return fmt.Errorf("%s is locked but holds no PID: is a dev cluster starting? try again", path)
	}
	say("stopping the dev cluster (pid %d)", pid)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("could not signal pid %d: %w", pid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		held, err := locked(int(f.Fd()))
		if err != nil {
			return err
		}
		if !held {
			say("dev cluster stopped (pid %d has exited)", pid)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the dev cluster (pid %d) has not exited yet: %w", pid, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
