//go:build !linux

// Package terminal lets a development program that make starts (make run,
// make devcluster) take Ctrl-C for itself.
package terminal

import (
	"errors"
	"os"
)

// Take does nothing outside Linux.
func Take() (restore func()) { return func() {} }

// OpenPTY fails outside Linux.
func OpenPTY() (master, slave *os.File, err error) {
	return nil, nil, errors.New("pseudo-terminals are opened on Linux only")
}
