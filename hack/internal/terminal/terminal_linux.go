// Package terminal lets a development program that make starts (make run,
// make devcluster) take Ctrl-C for itself.
package terminal

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Take moves this process, when standard input is a terminal, into a
// process group of its own and makes it the terminal's foreground group.
// Ctrl-C then interrupts it alone, not make and go run above it: make ends
// with status 0 once the program has cleaned up, instead of dying of the
// signal. The returned function gives the terminal back to the group that
// had it. Elsewhere (not a terminal, run in the background, not Linux) it
// does nothing.
func Take() (restore func()) {
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
