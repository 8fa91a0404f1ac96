package main

import "syscall"

// ownGroup starts a program in a process group of its own, so that a
// Ctrl-C meant for make run never reaches it directly: run stops the
// programs itself, in order (the demo first, while the operators can still
// remove its finalizer). Pdeathsig: a run that is killed takes them along.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
