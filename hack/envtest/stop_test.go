package envtest

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
)

func TestStopKillsEveryProcessAndRemovesTheDirectory(t *testing.T) {
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	if len(pids) < 2 {
		t.Fatalf("got %d processes, want etcd and kube-apiserver (and any started again on another port)", len(pids))
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("got %v for the cluster directory after Stop, want it removed", err)
	}
}
