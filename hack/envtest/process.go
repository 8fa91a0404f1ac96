package envtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
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

	cmd      *exec.Cmd
	done     chan struct{} // closed when the process exited
	err      error         // its exit error, once done is closed
	logStart int64         // the log's size when this run began
}

func (p *process) start() error {
	log, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("could not open the %s log: %w", p.name, err)
	}
	if fi, err := log.Stat(); err == nil {
		p.logStart = fi.Size()
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
// are closed before returning, so another process can take a port before
// the component binds it: startOnFreePorts starts it again on others.
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

// portAttempts bounds how often a component is started again because a
// port picked for it was taken.
const portAttempts = 5

// errNotOurs says a health check was answered by another process on the
// port: the component could not bind it.
var errNotOurs = errors.New("another process answers on its port")

// startOnFreePorts picks n free ports, starts the process build makes for
// them, and runs the ready check build returns. A port is free when picked,
// but another process can take it before the component binds it: clusters
// start side by side in `make test`, and clients take their ephemeral ports
// from the same range. The component then exits saying the address is in
// use, or the ready check finds another process answering; either way it
// is started again on other ports, up to portAttempts times.
func (c *Cluster) startOnFreePorts(ctx context.Context, began time.Time, n int, build func(ports []int) (*process, func(context.Context) error)) error {
	for attempt := 1; ; attempt++ {
		ports, err := c.pickPorts(n)
		if err != nil {
			return err
		}
		p, ready := build(ports)
		if err := p.start(); err != nil {
			return err
		}
		err = ready(ctx)
		if err == nil {
			return nil
		}
		taken := errors.Is(err, errNotOurs) || p.exitedOnTakenPort()
		if !taken || attempt == portAttempts || ctx.Err() != nil {
			return err
		}
		p.stop(3 * time.Second)
		c.progress(fmt.Sprintf("%s: ports %v were taken before it bound them; starting it on others", p.name, ports), began)
	}
}

// exitedOnTakenPort reports whether the process exited because an address
// it was to listen on was in use, as its log says.
func (p *process) exitedOnTakenPort() bool {
	if p.done == nil || p.running() {
		return false
	}
	b, err := os.ReadFile(p.logFile)
	if err != nil || int64(len(b)) < p.logStart {
		return false
	}
	return bytes.Contains(b[p.logStart:], []byte("address already in use"))
}

// etcdIsNamed checks that the etcd answering at url is the member named
// name, through etcd's JSON gateway: another cluster's etcd on a port taken
// in between answers /health too. It wraps errNotOurs when it is not.
func etcdIsNamed(ctx context.Context, url, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v3/cluster/member/list", strings.NewReader("{}"))
	if err != nil {
		return fmt.Errorf("could not build a member list request: %w", err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: could not list etcd's members at %s: %w", errNotOurs, url, err)
	}
	defer resp.Body.Close()
	var list struct {
		Members []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return fmt.Errorf("%w: could not read etcd's members at %s (%s): %w", errNotOurs, url, resp.Status, err)
	}
	for _, m := range list.Members {
		if m.Name == name {
			return nil
		}
	}
	return fmt.Errorf("%w: etcd at %s has no member %s (%+v)", errNotOurs, url, name, list.Members)
}

// randomHex returns n random bytes in hexadecimal.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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
