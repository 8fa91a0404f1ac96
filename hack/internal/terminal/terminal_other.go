//go:build !linux

// Package terminal lets a development program that make starts (make run,
// make devcluster) take Ctrl-C for itself.
package terminal

// Take does nothing outside Linux.
func Take() (restore func()) { return func() {} }
