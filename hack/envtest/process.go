package envtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one control-plane binary started by the cluster, with its
// output in <dir>/<name>.log.
type process struct {
	name    string
	path    string
	args    []string
	logFile string

	cmd  *exec.Cmd
	done chan struct{} // closed when the process exited
	err  error         // its exit error, once done is closed
}

func (p *process) start() error {
	log, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("could not open the %s log: %w", p.name, err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("could not start %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() {
		p.err = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return nil
}

// running reports whether the process was started and has not exited.
func (p *process) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process, and SIGKILL if it has not exited
// after grace. It returns once the process has exited.
func (p *process) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// failure describes an early exit or a readiness timeout with the end of
// the process's log, so the cause is in the error.
func (p *process) failure(what string) error {
	tail := logTail(p.logFile, 20)
	if !p.running() && p.done != nil {
		if p.err != nil {
			return fmt.Errorf("%s exited %s (%w); end of %s:\n%s", p.name, what, p.err, p.logFile, tail)
		}
		return fmt.Errorf("%s exited %s; end of %s:\n%s", p.name, what, p.logFile, tail)
	}
	return fmt.Errorf("%s %s; end of %s:\n%s", p.name, what, p.logFile, tail)
}

// waitHealthy polls url (with client certificate cert, if any) every 50ms
// until it answers 200, the process exits, or ctx is done.
func (p *process) waitHealthy(ctx context.Context, url string, cfg *tls.Config) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("could not build a health request: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return p.failure("before it was healthy")
		case <-ctx.Done():
			return p.failure(fmt.Sprintf("was not healthy at %s in time (%v)", url, context.Cause(ctx)))
		case <-tick.C:
		}
	}
}

func logTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(toBytes(all), []byte("\n")))
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners
// are closed before returning, so another process could take a port in
// between; Start reports that as a start-up failure with the log.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("could not find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ErrBinariesMissing is wrapped by Start's error when a control-plane
// binary cannot be found.
var ErrBinariesMissing = errors.New("control-plane binaries not found")

// EnvBinDir names the environment variable that points at a directory of
// control-plane binaries, for users outside the Kooper repository.
const EnvBinDir = "KOOPER_CONTROLPLANE_BIN"

// findBinDir returns the directory holding the control-plane binaries: dir
// if set, else $KOOPER_CONTROLPLANE_BIN, else the first bin/ holding
// kube-apiserver in the working directory or one of its parents (the
// repository's bin/, filled by `make controlplane`).
func findBinDir(dir string, need []string) (string, error) {
	var tried []string
	check := func(d string) bool {
		tried = append(tried, d)
		for _, n := range need {
			if fi, err := os.Stat(filepath.Join(d, n)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	switch {
	case dir != "":
		if check(dir) {
			return dir, nil
		}
	case os.Getenv(EnvBinDir) != "":
		if d := os.Getenv(EnvBinDir); check(d) {
			return d, nil
		}
	default:
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("could not get the working directory: %w", err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if check(filepath.Join(d, "bin")) {
				return filepath.Join(d, "bin"), nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("%w: need %s in one of %s; run `make controlplane` in the Kooper repository, or set %s to a directory holding them",
		ErrBinariesMissing, strings.Join(need, ", "), strings.Join(tried, ", "), EnvBinDir)
}

func itoa(i int) string { return strconv.Itoa(i) }
