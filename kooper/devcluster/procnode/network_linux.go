//go:build linux

package procnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// supported reports why this machine cannot run pods, or nil: network
// namespaces, veth and chroot need root (CAP_NET_ADMIN, CAP_SYS_ADMIN,
// CAP_SYS_CHROOT) and ip(8) from iproute2.
func supported() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it runs as uid %d, not root (network namespaces, veth and chroot need it)", ErrUnsupported, os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: ip(8) from iproute2 is missing: %w", ErrUnsupported, err)
	}
	return nil
}

// ipCmd runs ip(8) with args, and returns its error with its output.
func ipCmd(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// network is a node's bridge: a /24 of its own, the bridge holding the
// first address (the node's InternalIP, the pods' gateway), and the pods'
// veth ends attached to it. Names carry the PID of the process that made
// them, so leftovers of a killed process are recognised and removed.
type network struct {
	bridge string
	prefix netip.Prefix
	gw     netip.Addr

	mu   sync.Mutex
	used map[netip.Addr]bool
	next netip.Addr // where the search for a free address starts
	seq  int
}

// tag is this process's part of every interface and namespace name.
var tag = strconv.FormatInt(int64(os.Getpid()), 36)

var nodeSeq struct {
	sync.Mutex
	n int
}

// newNetwork creates a bridge with a /24 that no route of this machine
// uses yet, picked at random in 10.200.0.0/13 so that nodes of concurrent
// test processes do not collide.
func newNetwork(ctx context.Context) (*network, error) {
	removeLeftovers(ctx)
	nodeSeq.Lock()
	nodeSeq.n++
	bridge := fmt.Sprintf("kpb%s-%d", tag, nodeSeq.n)
	nodeSeq.Unlock()
	var prefix netip.Prefix
	for range 20 {
		var b [2]byte
		_, _ = rand.Read(b[:])
		v := binary.BigEndian.Uint16(b[:]) % (8 * 256)
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(200 + v/256), byte(v % 256), 0}), 24)
		if !routed(p) {
			prefix = p
			break
		}
	}
	if !prefix.IsValid() {
		return nil, errors.New("no free /24 in 10.200.0.0/13 for the node's bridge")
	}
	n := &network{bridge: bridge, prefix: prefix, gw: prefix.Addr().Next(), used: map[netip.Addr]bool{}}
	for _, args := range [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", netip.PrefixFrom(n.gw, 24).String(), "dev", bridge},
		{"link", "set", bridge, "up"},
	} {
		if err := ipCmd(ctx, args...); err != nil {
			_ = n.close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("could not create the node's bridge: %w", err)
		}
	}
	return n, nil
}

// routed reports whether a route of this machine overlaps p.
func routed(p netip.Prefix) bool {
	out, err := exec.Command("ip", "-4", "route", "show").Output()
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(out)) {
		dst, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if r, err := netip.ParsePrefix(dst); err == nil && r.Overlaps(p) {
			return true
		}
	}
	return false
}

// removeLeftovers deletes the bridges and namespaces of processes that no
// longer run (a killed test): their names carry the PID.
func removeLeftovers(ctx context.Context) {
	alive := func(name, prefix string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return true
		}
		id, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.ParseInt(id, 36, 64)
		if err != nil {
			return true
		}
		return syscall.Kill(int(pid), 0) == nil || errors.Is(syscall.Kill(int(pid), 0), syscall.EPERM)
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if !alive(e.Name(), "kpn") {
				_ = ipCmd(ctx, "netns", "del", e.Name())
			}
		}
	}
	if links, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, l := range links {
			if !alive(l.Name(), "kpb") {
				_ = ipCmd(ctx, "link", "del", l.Name())
			}
		}
	}
}

func (n *network) close(ctx context.Context) error {
	return ipCmd(ctx, "link", "del", n.bridge)
}

// sandbox is a pod's network namespace: its veth pair, its address, and
// the forwarder that gives it the API server at the kubernetes Service's
// address, as kube-proxy would.
type sandbox struct {
	net  *network
	name string // the namespace, in /run/netns
	veth string // the host end
	ip   netip.Addr

	fwd     net.Listener
	fwdDone chan struct{}
}

// newSandbox creates a network namespace with eth0 on the node's bridge
// and lo holding the API server's Service address, where a forwarder to
// apiServer listens.
func (n *network) newSandbox(ctx context.Context, service netip.AddrPort, apiServer string, dial func(context.Context, string) (net.Conn, error)) (*sandbox, error) {
	n.mu.Lock()
	n.seq++
	seq := n.seq
	// Addresses go round the /24 rather than lowest first: a pod's address
	// is not reused at once, while the host may still have the last pod's
	// MAC address for it.
	var ip netip.Addr
	a := n.next
	for range 256 {
		if !a.IsValid() || !n.prefix.Contains(a) || a == lastAddr(n.prefix) {
			a = n.gw.Next()
		}
		if !n.used[a] {
			ip = a
			n.used[a] = true
			n.next = a.Next()
			break
		}
		a = a.Next()
	}
	n.mu.Unlock()
	if !ip.IsValid() {
		return nil, fmt.Errorf("no free pod address in %s", n.prefix)
	}
	s := &sandbox{net: n, name: fmt.Sprintf("kpn%s-%d", tag, seq), veth: fmt.Sprintf("kpv%s-%d", tag, seq), ip: ip}
	steps := [][]string{
		{"netns", "add", s.name},
		{"link", "add", s.veth, "type", "veth", "peer", "name", "eth0", "netns", s.name},
		{"link", "set", s.veth, "master", n.bridge, "up"},
		{"-n", s.name, "link", "set", "lo", "up"},
		{"-n", s.name, "addr", "add", netip.PrefixFrom(ip, 24).String(), "dev", "eth0"},
		{"-n", s.name, "link", "set", "eth0", "up"},
		{"-n", s.name, "route", "add", "default", "via", n.gw.String()},
		{"-n", s.name, "addr", "add", netip.PrefixFrom(service.Addr(), 32).String(), "dev", "lo"},
	}
	for _, args := range steps {
		if err := ipCmd(ctx, args...); err != nil {
			s.close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("could not create the pod's network namespace: %w", err)
		}
	}
	err := s.inNamespace("", func() error {
		var err error
		s.fwd, err = net.Listen("tcp", service.String())
		return err
	})
	if err != nil {
		s.close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("could not listen on %s in the pod's network namespace: %w", service, err)
	}
	s.fwdDone = make(chan struct{})
	go s.forward(apiServer, dial)
	return s, nil
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	return netip.AddrFrom4([4]byte{a[0], a[1], a[2], 255})
}

// forward copies each connection to the Service address to apiServer, in
// the host's namespace, until the listener is closed.
func (s *sandbox) forward(apiServer string, dial func(context.Context, string) (net.Conn, error)) {
	defer close(s.fwdDone)
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	defer func() {
		mu.Lock()
		for c := range open {
			_ = c.Close()
		}
		mu.Unlock()
	}()
	for {
		in, err := s.fwd.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			out, err := dial(context.Background(), apiServer)
			if err != nil {
				_ = in.Close()
				return
			}
			mu.Lock()
			open[in], open[out] = true, true
			mu.Unlock()
			var copies sync.WaitGroup
			copies.Go(func() { _, _ = io.Copy(out, in); closeWrite(out) })
			copies.Go(func() { _, _ = io.Copy(in, out); closeWrite(in) })
			copies.Wait()
			_, _ = in.Close(), out.Close()
			mu.Lock()
			delete(open, in)
			delete(open, out)
			mu.Unlock()
		})
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// close stops the forwarder and deletes the namespace (and with it the
// veth pair).
func (s *sandbox) close(ctx context.Context) {
	if s.fwd != nil {
		_ = s.fwd.Close()
		<-s.fwdDone
	}
	_ = ipCmd(ctx, "netns", "del", s.name)
	_ = ipCmd(ctx, "link", "del", s.veth) // gone with the namespace, unless it was never moved
	_ = ipCmd(ctx, "neigh", "del", s.ip.String(), "dev", s.net.bridge)
	s.net.mu.Lock()
	delete(s.net.used, s.ip)
	s.net.mu.Unlock()
}

// inNamespace runs fn on an OS thread that is in the sandbox's network
// namespace and, when hostname is set, in a new UTS namespace with that
// host name: sockets fn opens, and processes it starts, are the pod's.
// The thread returns to the host's namespaces afterwards, or, if it
// cannot, dies with its goroutine.
func (s *sandbox) inNamespace(hostname string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Not unlocked unless the thread is back in the host's namespaces:
		// a locked goroutine that returns takes its thread with it.
		restored, err := s.enter(hostname, fn)
		if restored {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

func (s *sandbox) enter(hostname string, fn func() error) (restored bool, err error) {
	hostNet, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return true, fmt.Errorf("could not open this thread's network namespace: %w", err)
	}
	defer hostNet.Close()
	hostUTS, err := os.Open("/proc/thread-self/ns/uts")
	if err != nil {
		return true, fmt.Errorf("could not open this thread's UTS namespace: %w", err)
	}
	defer hostUTS.Close()
	podNet, err := os.Open(filepath.Join("/run/netns", s.name))
	if err != nil {
		return true, fmt.Errorf("could not open the pod's network namespace: %w", err)
	}
	defer podNet.Close()
	if err := unix.Setns(int(podNet.Fd()), unix.CLONE_NEWNET); err != nil {
		return true, fmt.Errorf("could not enter the pod's network namespace: %w", err)
	}
	if hostname != "" {
		if err = unix.Unshare(unix.CLONE_NEWUTS); err == nil {
			err = unix.Sethostname([]byte(hostname))
		}
		if err != nil {
			err = fmt.Errorf("could not set the pod's host name: %w", err)
		}
	}
	if err == nil {
		err = fn()
	}
	restored = unix.Setns(int(hostNet.Fd()), unix.CLONE_NEWNET) == nil
	if hostname != "" {
		restored = restored && unix.Setns(int(hostUTS.Fd()), unix.CLONE_NEWUTS) == nil
	}
	return restored, err
}
