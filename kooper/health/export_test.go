package health

import (
	"crypto/tls"
	"net/http"
	"time"

	"k8s.io/utils/clock"
)

// Limits are a server's bounds (the package documentation's table), for
// tests that shorten them.
type Limits struct {
	// The TLS handshake takes the smallest of the first three.
	ReadHeader, Read, Write, Idle time.Duration
	MaxHeaderBytes                int
}

func (l Limits) server() serverLimits {
	return serverLimits{readHeader: l.ReadHeader, read: l.Read, write: l.Write, idle: l.Idle, maxHeaderBytes: l.MaxHeaderBytes}
}

// StartWithin is Start with servers bounded by l instead of the defaults.
func StartWithin(cfg Config, l Limits) (*Server, error) {
	cfg.limits = l.server()
	return Start(cfg)
}

// ServeWithin serves h over plain HTTP, or like ServeTLS if tlsConfig is
// not nil, bounded by l instead of the defaults.
func ServeWithin(addr string, h http.Handler, tlsConfig *tls.Config, l Limits) (*Server, error) {
	return listen(addr, tlsConfig, h, nil, l.server())
}

// StartWithClock is Start with the secure metrics' cached decisions and
// held-back log lines timed by c.
func StartWithClock(cfg Config, c clock.PassiveClock) (*Server, error) {
	cfg.clock = c
	return Start(cfg)
}
