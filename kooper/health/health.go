// Package health serves an operator's operational endpoints on one address:
// /metrics (Prometheus), /healthz (the process is alive) and /readyz (it
// can do its job). With Config.SecureMetrics, /metrics moves to an HTTPS
// address of its own, for clients the API server authenticates and
// authorizes only.
//
// What "ready" means is the operator's choice, through Config.Ready. For
// controllers run by a *leaderelection.Runner, the runner's Ready method is
// the usual one: a leader is ready once every controller's cache is filled; a
// standby is ready at once, because it can take over, so a Deployment of two
// replicas becomes Available with one of them waiting. Without leader
// election (the runner's Config.Disabled), a replica is ready once the caches
// are filled. A *sharding.Runner has a Ready method too.
//
//	runner, err := leaderelection.New(leaderelection.Config{...}, ctrlA, ctrlB)
//	if err != nil { ... }
//	srv, err := health.Start(health.Config{
//		Addr:     ":8080",
//		Gatherer: registry,
//		Ready:    runner.Ready,
//	})
//	if err != nil { ... }
//	defer srv.Stop()
//	return runner.Run(ctx)
//
// # Limits
//
// Every server of this package (Start, ServeTLS) bounds what one
// connection may hold, so that slow or idle clients cannot pile up
// connections and memory:
//
//	| limit                           | value  | what it bounds                                        |
//	|---------------------------------|--------|-------------------------------------------------------|
//	| TLS handshake (ServeTLS)        | 5s     | from accept to the end of the handshake               |
//	| reading a request's headers     | 5s     | from the first byte (or the end of the handshake)     |
//	| reading a whole request         | 30s    | headers and body                                      |
//	| handling and writing a response | 30s    | from the end of the headers to the last byte written  |
//	| keep-alive between requests     | 90s    | an idle connection is closed after that               |
//	| request headers                 | 32 KiB | larger answers 431 Request Header Fields Too Large    |
//	| /metrics served at once         | 4      | more answers 503 at once (each gathers every metric)  |
//
// net/http bounds the handshake by the smallest of its read and write
// timeouts. SecureMetrics adds its own bounds on the reviews a token
// costs (see there). The profiles under /debug/pprof/ (Config.EnableProfiling) run
// for their seconds parameter, longer than the limits: their connection's
// deadlines are lifted for that long. Scrapes, probes and admission
// reviews all fit in these limits; none is configurable.
package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/logkey"
	"github.com/kooperkit/kooper/kooper/log"
)

// Config configures a Server.
type Config struct {
	// Addr is the address to listen on, e.g. ":8080" or "127.0.0.1:0".
	// Required.
	Addr string
	// Gatherer is served on /metrics. Default: no /metrics.
	Gatherer prometheus.Gatherer
	// Ready answers /readyz: a nil error is ready (200, with the status as
	// the body, e.g. the replica's role), an error is not (503, with the
	// error as the body). Default: always ready. A
	// *leaderelection.Runner's or a *sharding.Runner's Ready method is
	// the usual one.
	Ready func() (status string, err error)
	// EnableProfiling serves Go's profiles under /debug/pprof/ (net/http/pprof).
	// Off by default: profiles expose internals and cost CPU while taken.
	EnableProfiling bool
	// SecureMetrics, if set, serves /metrics over HTTPS to authenticated
	// and authorized clients only, on an address of its own; the plain
	// address then serves /healthz and /readyz (for the kubelet's probes)
	// and no /metrics. Default: /metrics on Addr, open to anyone who can
	// reach it.
	SecureMetrics *SecureMetrics
	// Logger receives the server's errors. Default log.Noop.
	Logger log.Logger

	// limits bound the connections of the servers Start starts (the plain
	// one and the SecureMetrics one). The zero value means defaultLimits,
	// the package documentation's table, and only this package's tests set
	// another (export_test.go): the limits are not configurable.
	limits serverLimits
	// clock times the secure metrics' cached decisions and the log lines
	// they hold back; nil is the real clock. Only this package's tests set
	// another (export_test.go).
	clock clock.PassiveClock
}

// Server is a running endpoint server. Build one with Start.
type Server struct {
	addr string
	srv  *http.Server
	done chan struct{}
	// secure serves /metrics with Config.SecureMetrics.
	secure *Server
}

// Start listens on cfg.Addr and serves until Stop.
func Start(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		return nil, errors.New("health: an address is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = log.Noop
	}
	lim := cfg.limits
	if lim == (serverLimits{}) {
		lim = defaultLimits()
	}
	mux := http.NewServeMux()
	var secure *Server
	if cfg.Gatherer != nil {
		metrics := promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{MaxRequestsInFlight: maxScrapes})
		if cfg.SecureMetrics != nil {
			var err error
			if secure, err = startSecure(*cfg.SecureMetrics, metrics, cfg.Logger, lim, cfg.clock); err != nil {
				return nil, err
			}
		} else {
			mux.Handle("/metrics", metrics)
		}
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		status := "ok"
		if cfg.Ready != nil {
			s, err := cfg.Ready()
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			status = s
		}
		fmt.Fprintln(w, status)
	})
	if cfg.EnableProfiling {
		mux.HandleFunc("/debug/pprof/", lasting(lim, pprof.Index)) // named profiles: ?seconds= for a delta
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", lasting(lim, pprof.Profile))
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", lasting(lim, pprof.Trace))
	}
	srv, err := listen(cfg.Addr, nil, mux, cfg.Logger, lim)
	if err != nil {
		if secure != nil {
			secure.Stop()
		}
		return nil, err
	}
	srv.secure = secure
	return srv, nil
}

// ServeTLS serves h over TLS on addr until Stop, e.g. an admission webhook.
func ServeTLS(addr string, h http.Handler, tlsConfig *tls.Config, logger log.Logger) (*Server, error) {
	return listen(addr, tlsConfig, h, logger, defaultLimits())
}

// listen serves h on addr, over TLS if tlsConfig is not nil, within lim.
func listen(addr string, tlsConfig *tls.Config, h http.Handler, logger log.Logger, lim serverLimits) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("could not listen on %s: %w", addr, err)
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	return serve(l, h, logger, lim), nil
}

// maxScrapes is how many requests /metrics serves at once; beyond it,
// promhttp answers 503 at once.
const maxScrapes = 4

// serverLimits are the bounds of the package documentation's table.
type serverLimits struct {
	readHeader, read, write, idle time.Duration
	maxHeaderBytes                int
}

// defaultLimits are the limits of every server of this package; only its
// tests start servers with others (Config.limits, export_test.go).
func defaultLimits() serverLimits {
	return serverLimits{
		// Also bounds the TLS handshake: net/http gives it the smallest of
		// the read header, read and write timeouts.
		readHeader: 5 * time.Second,
		// A scrape, a probe or an AdmissionReview (at most a few MiB, sent
		// by an API server that gives up after 30s) is read in well under
		// that.
		read: 30 * time.Second,
		// The API server waits at most 30s for a webhook, Prometheus 10s
		// by default for a scrape.
		write: 30 * time.Second,
		// Longer than Prometheus' usual scrape intervals and client-go's
		// idle connection timeout (90s), so keep-alive connections get
		// reused.
		idle: 90 * time.Second,
		// Bearer tokens are the largest headers expected, a few KiB.
		// net/http allows 4 KiB more than this before answering 431.
		maxHeaderBytes: 32 << 10,
	}
}

func serve(l net.Listener, h http.Handler, logger log.Logger, lim serverLimits) *Server {
	if logger == nil {
		logger = log.Noop
	}
	s := &Server{
		addr: l.Addr().String(),
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: lim.readHeader,
			ReadTimeout:       lim.read,
			WriteTimeout:      lim.write,
			IdleTimeout:       lim.idle,
			MaxHeaderBytes:    lim.maxHeaderBytes,
			// Failed handshakes and the like, one per bad connection:
			// Debug, not net/http's default of the standard logger.
			ErrorLog: stdlog.New(debugWriter{logger}, "", 0),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("server stopped", "addr", s.addr, logkey.Err, err)
		}
	}()
	return s
}

// debugWriter logs what net/http's error log writes, at Debug.
type debugWriter struct{ logger log.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.logger.Debug("http server connection error", "detail", strings.TrimSpace(string(p)))
	return len(p), nil
}

// lasting lifts the connection's deadlines for a handler that runs for its
// seconds parameter (a CPU profile, a trace, a delta profile): the limits
// then start after that many seconds. Without it the read timeout would
// cancel the request's context and cut a profile short (pprof extends the
// write deadline itself, but not the read deadline).
func lasting(lim serverLimits, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// pprof's defaults when seconds is absent or invalid: 30s for a CPU
		// profile, 1s for a trace, none for other profiles.
		d := 30 * time.Second
		if sec, err := strconv.ParseFloat(r.FormValue("seconds"), 64); err == nil && sec > 0 && sec < 1e6 {
			d = time.Duration(sec * float64(time.Second))
		}
		rc := http.NewResponseController(w)
		// Errors mean the connection has no deadlines to lift.
		_ = rc.SetReadDeadline(time.Now().Add(d + lim.read))
		_ = rc.SetWriteDeadline(time.Now().Add(d + lim.write))
		h(w, r)
	}
}

// Addr returns the address the server listens on (with the port chosen for
// ":0").
func (s *Server) Addr() string { return s.addr }

// SecureAddr returns the address serving /metrics over HTTPS
// (Config.SecureMetrics), or "" without it.
func (s *Server) SecureAddr() string {
	if s.secure == nil {
		return ""
	}
	return s.secure.addr
}

// Stop shuts the server down, waiting up to 5 seconds for requests in
// flight, and returns once it has stopped.
func (s *Server) Stop() {
	if s.secure != nil {
		s.secure.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}
