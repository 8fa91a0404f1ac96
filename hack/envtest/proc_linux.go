package envtest

import "syscall"

// sysProcAttr kills a control-plane process when the process that started
// it dies, so a crashed or killed test leaves no apiserver behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
