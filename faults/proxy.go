package faults

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Proxy is a fault-injecting TCP proxy in front of the API server, run in
// the test process: clients that reach the API server through it can have
// their connections reset, delayed or blackholed.
//
// The first version ran Toxiproxy v2.12.0 in process. Its RemoveToxic
// deadlocked in the soak (it waits, holding the collection's lock, for a
// link that needs the lock to go away: Shopify/toxiproxy#558, #427, open
// in 2026), so the faults are injected here, in a proxy of our own.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu        sync.Mutex
	cond      *sync.Cond
	links     map[*link]struct{}
	latency   time.Duration
	jitter    time.Duration
	blackhole bool
	reset     bool
	closed    bool
	wg        sync.WaitGroup
}

// link is one proxied connection. stalled and done are guarded by the
// proxy's mu.
type link struct {
	client, server net.Conn
	stalled        bool // holds its bytes, see Stall
	done           bool // a pump has ended: held bytes have nowhere to go
}

// NewProxy starts a proxy on a free 127.0.0.1 port forwarding to upstream
// (host:port). name is for messages.
func NewProxy(name, upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("could not start the proxy %s: %w", name, err)
	}
	p := &Proxy{ln: ln, upstream: upstream, links: map[*link]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.reset || p.closed
		p.mu.Unlock()
		if refuse {
			resetConn(c)
			continue
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *Proxy) serve(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	l := &link{client: client, server: server}
	p.mu.Lock()
	if p.closed || p.reset {
		p.mu.Unlock()
		resetConn(client)
		_ = server.Close()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	var pumps sync.WaitGroup
	pumps.Go(func() { p.pump(l, server, client) })
	pumps.Go(func() { p.pump(l, client, server) })
	pumps.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// pump copies src to dst, one of l's directions, chunk by chunk, each
// held while the proxy is blackholed or l stalled and delayed by its
// latency, until either end fails; it then closes both.
func (p *Proxy) pump(l *link, dst, src net.Conn) {
	defer func() {
		_, _ = dst.Close(), src.Close()
		p.mu.Lock()
		l.done = true
		p.cond.Broadcast() // the other direction may be holding a chunk
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold(l) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				closeWrite(dst)
			}
			return
		}
	}
}

// hold waits while the proxy is blackholed or l stalled, then for the
// latency; false once the proxy is closed or l's other direction ended.
func (p *Proxy) hold(l *link) bool {
	p.mu.Lock()
	for (p.blackhole || l.stalled) && !p.closed && !l.done {
		p.cond.Wait()
	}
	closed, latency, jitter := p.closed || l.done, p.latency, p.jitter
	p.mu.Unlock()
	if closed {
		return false
	}
	if latency > 0 {
		d := latency
		if jitter > 0 {
			d += time.Duration(rand.Int64N(int64(2*jitter))) - jitter
		}
		time.Sleep(d)
	}
	return true
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// resetConn closes c with a TCP RST instead of a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Latency delays every chunk of data each way by latencyMS, plus or minus
// jitterMS, until the returned heal is called.
func (p *Proxy) Latency(latencyMS, jitterMS int) (heal func(), err error) {
	p.mu.Lock()
	p.latency, p.jitter = time.Duration(latencyMS)*time.Millisecond, time.Duration(jitterMS)*time.Millisecond
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.latency, p.jitter = 0, 0
		p.mu.Unlock()
	}, nil
}

// Blackhole lets no byte through, and closes nothing, until heal: a
// network partition, or a connection that died without a word behind a
// broken load balancer. Bytes are held, not dropped, as TCP would
// retransmit them once the partition heals.
func (p *Proxy) Blackhole() (heal func(), err error) {
	p.mu.Lock()
	p.blackhole = true
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.blackhole = false
		p.cond.Broadcast()
		p.mu.Unlock()
	}, nil
}

// Stall lets no byte through the connections open now, either way, and
// closes nothing, until heal; connections opened afterwards pass. That is
// a watch stuck behind a load balancer or a hung API server: its
// connection alive, silent, while the client's new requests get through.
// As with Blackhole, bytes are held, not dropped, and a close by either
// end still passes.
func (p *Proxy) Stall() (heal func(), err error) {
	p.mu.Lock()
	stalled := make([]*link, 0, len(p.links))
	for l := range p.links {
		l.stalled = true
		stalled = append(stalled, l)
	}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		for _, l := range stalled {
			l.stalled = false
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}, nil
}

// Reset resets (TCP RST) every open connection, watches in the middle of
// their streams included, and every new one until heal.
func (p *Proxy) Reset() (heal func(), err error) {
	p.mu.Lock()
	p.reset = true
	for l := range p.links {
		resetConn(l.client)
		resetConn(l.server)
	}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.reset = false
		p.mu.Unlock()
	}, nil
}

// Close stops the proxy, closes its connections and waits for its
// goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	for l := range p.links {
		_, _ = l.client.Close(), l.server.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// Dial connects through the proxy, for tests of the proxy itself.
func (p *Proxy) Dial() (net.Conn, error) { return net.Dial("tcp", p.Addr()) }
