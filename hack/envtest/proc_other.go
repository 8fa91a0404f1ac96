//go:build !linux

package envtest

import "syscall"

// sysProcAttr puts a control-plane process in its own process group. Only
// Linux can also kill it when its parent dies: elsewhere, Stop it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
