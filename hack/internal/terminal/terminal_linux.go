// Package terminal lets a development program that make starts (make run,
// make devcluster) take Ctrl-C for itself.
package terminal

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
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

// OpenPTY opens a pseudo-terminal pair: what a terminal emulator holds
// (master; writing 0x03 to it is what Ctrl-C types) and what the programs
// in it see (slave). The caller closes both.
func OpenPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("no pseudo-terminals here: %w", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("could not unlock the pseudo-terminal: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("could not get the pseudo-terminal's number: %w", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("could not open the pseudo-terminal's slave: %w", err)
	}
	return master, slave, nil
}
