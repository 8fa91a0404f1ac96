package faults

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// startNamed starts cmd in a new UTS namespace whose host name is name: it
// unshares the namespace on a locked OS thread, from which the child is
// forked, then puts the thread back in its own namespace. The thread must
// live on: the child's Pdeathsig follows the thread that forked it.
func startNamed(cmd *exec.Cmd, name string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/uts")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer own.Close()
		if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("could not make a UTS namespace for %s: %w", name, err)
			return
		}
		err = unix.Sethostname([]byte(name))
		if err == nil {
			err = cmd.Start()
		}
		if rerr := unix.Setns(int(own.Fd()), unix.CLONE_NEWUTS); rerr != nil {
			// The thread stays locked, and parked, so that neither the
			// scheduler runs other goroutines in the child's namespace nor
			// the thread's exit kills the child.
			errc <- err
			select {}
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}
