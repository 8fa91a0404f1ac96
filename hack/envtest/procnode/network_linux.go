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
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// supported reports why this machine cannot run pods, or nil: network
// namespaces, veth and chroot need root. The network is set up over
// netlink from this process, so no other program is needed.
func supported() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("%w: it runs as uid %d, not root: run the tests as root (network namespaces, veth and chroot need CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_SYS_CHROOT)", ErrUnsupported, uid)
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
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("could not create the node's bridge: %w", err)
	}
	removeLeftovers()
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
	if err := n.create(); err != nil {
		_ = n.close()
		return nil, fmt.Errorf("could not create the node's bridge: %w", err)
	}
	return n, nil
}

// create adds the bridge, gives it the gateway's address and sets it up.
func (n *network) create() error {
	attrs := netlink.NewLinkAttrs() // not a zero LinkAttrs: its TxQLen 0 would be sent
	attrs.Name = n.bridge
	br := &netlink.Bridge{LinkAttrs: attrs}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("could not add bridge %s: %w", n.bridge, err)
	}
	if err := netlink.AddrAdd(br, addr(netip.PrefixFrom(n.gw, 24))); err != nil {
		return fmt.Errorf("could not add %s to %s: %w", n.gw, n.bridge, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return fmt.Errorf("could not set %s up: %w", n.bridge, err)
	}
	return nil
}

// addr is p as netlink adds it. Broadcast is IPv4zero because netlink
// would otherwise add one for a /24, where ip addr add, which this
// replaces, adds none.
func addr(p netip.Prefix) *netlink.Addr {
	return &netlink.Addr{
		IPNet:     &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
		Broadcast: net.IPv4zero,
	}
}

// routed reports whether an IPv4 route of the main table overlaps p. The
// default route does not count: it overlaps everything.
func routed(p netip.Prefix) bool {
	// An interrupted dump still holds the routes read so far: checking
	// them beats checking none.
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return false
	}
	for _, r := range routes {
		if r.Dst == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(r.Dst.IP)
		bits, _ := r.Dst.Mask.Size()
		if ok && bits > 0 && netip.PrefixFrom(ip.Unmap(), bits).Overlaps(p) {
			return true
		}
	}
	return false
}

// removeLeftovers deletes the bridges and namespaces of processes that no
// longer run (a killed test): their names carry the PID. A namespace's
// veth pair goes with it.
func removeLeftovers() {
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
	if entries, err := os.ReadDir(netnsDir); err == nil {
		for _, e := range entries {
			if !alive(e.Name(), "kpn") {
				_ = deleteNamespace(e.Name())
			}
		}
	}
	if links, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, l := range links {
			if !alive(l.Name(), "kpb") {
				_ = deleteLink(l.Name())
			}
		}
	}
}

func (n *network) close() error {
	return deleteLink(n.bridge)
}

// deleteLink deletes the link called name.
func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("could not find link %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("could not delete link %s: %w", name, err)
	}
	return nil
}

// netnsDir holds the named network namespaces, where ip netns and package
// netns keep them.
const netnsDir = "/run/netns"

// newNamespace creates the named network namespace name, a bind mount in
// netnsDir as ip netns add makes, and returns a handle to it. Creating it
// moves the calling thread into it, so that happens on a locked thread of
// its own which returns to the host's namespace or, if it cannot, dies
// with its goroutine, as in inNamespace.
func newNamespace(name string) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		ns, restored, err := createNamespace(name)
		if restored {
			runtime.UnlockOSThread()
		}
		done <- result{ns, err}
	}()
	r := <-done
	return r.ns, r.err
}

func createNamespace(name string) (ns netns.NsHandle, restored bool, err error) {
	host, err := netns.Get()
	if err != nil {
		return netns.None(), true, fmt.Errorf("could not open this thread's network namespace: %w", err)
	}
	defer host.Close()
	ns, err = netns.NewNamed(name)
	// NewNamed can fail after it moved the thread (the file exists, the
	// bind mount fails): return to the host's namespace in any case.
	restored = netns.Set(host) == nil
	if err != nil {
		return netns.None(), restored, fmt.Errorf("could not create network namespace %s: %w", name, err)
	}
	return ns, restored, nil
}

// deleteNamespace deletes the named network namespace name as ip netns
// del does. netns.DeleteNamed unmounts and removes the file, but stops if
// there is no mount (EINVAL): the file of a NewNamed that failed before
// its bind mount, which is removed all the same.
func deleteNamespace(name string) error {
	err := netns.DeleteNamed(name)
	if errors.Is(err, unix.EINVAL) {
		err = os.Remove(filepath.Join(netnsDir, name))
	}
	if err != nil {
		return fmt.Errorf("could not delete network namespace %s: %w", name, err)
	}
	return nil
}

// sandbox is a pod's network namespace: its veth pair, its address, and
// the forwarder that gives it the API server at the kubernetes Service's
// address, as kube-proxy would.
type sandbox struct {
	net  *network
	name string // the namespace, in netnsDir
	veth string // the host end
	ip   netip.Addr

	fwd     net.Listener
	fwdDone chan struct{}
}

// newSandbox creates a network namespace with eth0 on the node's bridge
// and lo holding the API server's Service address, where a forwarder to
// apiServer listens.
func (n *network) newSandbox(ctx context.Context, service netip.AddrPort, apiServer string, dial func(context.Context, string) (net.Conn, error)) (*sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("could not create the pod's network namespace: %w", err)
	}
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
	if err := s.create(service.Addr()); err != nil {
		s.close()
		return nil, fmt.Errorf("could not create the pod's network namespace: %w", err)
	}
	err := s.inNamespace("", func() error {
		var err error
		s.fwd, err = net.Listen("tcp", service.String())
		return err
	})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("could not listen on %s in the pod's network namespace: %w", service, err)
	}
	s.fwdDone = make(chan struct{})
	go s.forward(apiServer, dial)
	return s, nil
}

// create makes the sandbox's namespace, plugs it into the node's bridge
// and configures its interfaces.
func (s *sandbox) create(service netip.Addr) error {
	ns, err := newNamespace(s.name)
	if err != nil {
		return err
	}
	defer ns.Close()
	if err := s.plug(ns); err != nil {
		return err
	}
	return s.configure(ns, service)
}

// plug creates the veth pair, eth0 directly in the pod's namespace, and
// attaches the host end to the node's bridge.
func (s *sandbox) plug(ns netns.NsHandle) error {
	bridge, err := netlink.LinkByName(s.net.bridge)
	if err != nil {
		return fmt.Errorf("could not find the node's bridge %s: %w", s.net.bridge, err)
	}
	attrs := netlink.NewLinkAttrs() // not a zero LinkAttrs: its TxQLen 0 would be sent
	attrs.Name = s.veth
	veth := netlink.NewVeth(attrs)
	veth.PeerName = "eth0"
	veth.PeerNamespace = netlink.NsFd(ns)
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("could not add veth pair %s: %w", s.veth, err)
	}
	if err := netlink.LinkSetMaster(veth, bridge); err != nil {
		return fmt.Errorf("could not attach %s to %s: %w", s.veth, s.net.bridge, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return fmt.Errorf("could not set %s up: %w", s.veth, err)
	}
	return nil
}

// configure sets lo and eth0 up in the pod's namespace, with the pod's
// address on eth0, a default route through the node's bridge, and the
// Service address on lo, where the forwarder listens.
func (s *sandbox) configure(ns netns.NsHandle, service netip.Addr) error {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("could not open netlink in the pod's network namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("could not find lo: %w", err)
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("could not find eth0: %w", err)
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"set lo up", func() error { return h.LinkSetUp(lo) }},
		{"add the pod's address to eth0", func() error { return h.AddrAdd(eth0, addr(netip.PrefixFrom(s.ip, 24))) }},
		{"set eth0 up", func() error { return h.LinkSetUp(eth0) }},
		{"add the default route", func() error { return h.RouteAdd(&netlink.Route{Gw: s.net.gw.AsSlice()}) }},
		{"add the Service address to lo", func() error { return h.AddrAdd(lo, addr(netip.PrefixFrom(service, 32))) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			return fmt.Errorf("could not %s: %w", st.what, err)
		}
	}
	return nil
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

// close stops the forwarder and deletes the namespace, the veth pair and
// the bridge's neighbour entry for the pod's address, so that a later pod
// given the address is not sent to the old MAC address.
func (s *sandbox) close() {
	if s.fwd != nil {
		_ = s.fwd.Close()
		<-s.fwdDone
	}
	_ = deleteNamespace(s.name)
	// The pair goes with the namespace, but the kernel frees a namespace
	// later, and not at all while something still holds it: delete the host
	// end now, unless it is gone already (or was never made).
	if veth, err := netlink.LinkByName(s.veth); err == nil {
		_ = netlink.LinkDel(veth)
	}
	if bridge, err := netlink.LinkByName(s.net.bridge); err == nil {
		_ = netlink.NeighDel(&netlink.Neigh{LinkIndex: bridge.Attrs().Index, IP: s.ip.AsSlice()})
	}
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
	podNet, err := os.Open(filepath.Join(netnsDir, s.name))
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
