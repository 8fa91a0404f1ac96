package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownGroup starts a program in a process group of its own, so that a
// Ctrl-C meant for make run never reaches it directly: run stops the
// programs itself, in order (the demo first, while the operators can still
// remove its finalizer). Pdeathsig: a run that is killed takes them along.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// takeTerminal, when standard input is a terminal, moves run into a process
// group of its own and makes it the terminal's foreground group. Ctrl-C then
// interrupts run alone, not make and go run above it: make ends with status
// 0 once run has cleaned up, instead of dying of the signal. The returned
// function gives the terminal back to the group that had it.
func takeTerminal() (restore func()) {
	fd := int(os.Stdin.Fd())
	orig, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || orig != unix.Getpgrp() {
		return func() {} // not a terminal, or run in the background: leave it
	}
	// A background group that sets the foreground group is sent SIGTTOU.
	signal.Ignore(syscall.SIGTTOU)
	if err := unix.Setpgid(0, 0); err != nil {
		return func() {}
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp()); err != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, orig) }
}
