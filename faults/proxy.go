package faults

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy is a fault-injecting TCP proxy in front of the API server:
// Toxiproxy, run in this process. Clients that reach the API server
// through it can have their connections reset, delayed or blackholed.
type Proxy struct {
	p   *toxiproxy.Proxy
	seq atomic.Int64
}

// NewProxy starts a proxy on a free 127.0.0.1 port forwarding to upstream
// (host:port).
func NewProxy(name, upstream string) (*Proxy, error) {
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("could not start the proxy %s: %w", name, err)
	}
	return &Proxy{p: p}, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.p.Listen }

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() { p.p.Stop() }

// add adds a toxic of typ on both directions with attributes (JSON
// object members), and returns its removal.
func (p *Proxy) add(typ, attributes string) (remove func(), err error) {
	var names []string
	for _, stream := range []string{"downstream", "upstream"} {
		name := fmt.Sprintf("%s-%s-%d", typ, stream, p.seq.Add(1))
		js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":{%s}}`, name, typ, stream, attributes)
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			for _, n := range names {
				_ = p.p.Toxics.RemoveToxic(context.Background(), n)
			}
			return nil, fmt.Errorf("could not add the toxic %s: %w", typ, err)
		}
		names = append(names, name)
	}
	return func() {
		for _, n := range names {
			_ = p.p.Toxics.RemoveToxic(context.Background(), n)
		}
	}, nil
}

// Latency delays every chunk of data each way by latencyMS, plus or minus
// jitterMS, until the returned heal is called.
func (p *Proxy) Latency(latencyMS, jitterMS int) (heal func(), err error) {
	return p.add("latency", fmt.Sprintf(`"latency":%d,"jitter":%d`, latencyMS, jitterMS))
}

// Blackhole lets no byte through, and closes nothing, until heal: a
// connection that died without a word, as behind a broken load balancer.
func (p *Proxy) Blackhole() (heal func(), err error) {
	return p.add("timeout", `"timeout":0`)
}

// Reset resets (TCP RST) every open connection, watches in the middle of
// their streams included, and every new one until heal.
func (p *Proxy) Reset() (heal func(), err error) {
	return p.add("reset_peer", `"timeout":0`)
}

// Dial connects through the proxy, for tests of the proxy itself.
func (p *Proxy) Dial() (net.Conn, error) { return net.Dial("tcp", p.Addr()) }
