// Package health serves an operator's operational endpoints on one address:
// /metrics (Prometheus), /healthz (the process is alive) and /readyz (it
// can do its job).
//
// What "ready" means is the operator's choice, through Config.Ready. For
// controllers under leader election, Ready returned by Readiness is the usual
// one: a leader is ready once every controller's cache is filled; a standby
// is ready at once, because it can take over, so a Deployment of two replicas
// becomes Available with one of them waiting.
//
//	leader := health.NewLeader(recorder) // pass as leaderelection.Config.Recorder
//	srv, err := health.Start(health.Config{
//		Addr:     ":8080",
//		Gatherer: registry,
//		Ready:    health.Readiness(leader, ctrlA, ctrlB),
//	})
//	if err != nil { ... }
//	defer srv.Stop()
package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
	// error as the body). Default: always ready.
	Ready func() (status string, err error)
	// EnableProfiling serves Go's profiles under /debug/pprof/ (net/http/pprof).
	// Off by default: profiles expose internals and cost CPU while taken.
	EnableProfiling bool
	// Logger receives the server's errors. Default log.Noop.
	Logger log.Logger
}

// Server is a running endpoint server. Build one with Start.
type Server struct {
	addr string
	srv  *http.Server
	done chan struct{}
}

// Start listens on cfg.Addr and serves until Stop.
func Start(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		return nil, errors.New("health: an address is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = log.Noop
	}
	mux := http.NewServeMux()
	if cfg.Gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
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
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return Serve(cfg.Addr, mux, cfg.Logger)
}

// ServeTLS serves h over TLS on addr until Stop, e.g. an admission webhook.
func ServeTLS(addr string, h http.Handler, tlsConfig *tls.Config, logger log.Logger) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("could not listen on %s: %w", addr, err)
	}
	return serve(tls.NewListener(l, tlsConfig), h, logger), nil
}

// Serve serves h over plain HTTP on addr until Stop. Start uses it.
func Serve(addr string, h http.Handler, logger log.Logger) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("could not listen on %s: %w", addr, err)
	}
	return serve(l, h, logger), nil
}

func serve(l net.Listener, h http.Handler, logger log.Logger) *Server {
	if logger == nil {
		logger = log.Noop
	}
	s := &Server{
		addr: l.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("server stopped", "addr", s.addr, log.KeyErr, err)
		}
	}()
	return s
}

// Addr returns the address the server listens on (with the port chosen for
// ":0").
func (s *Server) Addr() string { return s.addr }

// Stop shuts the server down, waiting up to 5 seconds for requests in
// flight, and returns once it has stopped.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}

// LeaderRecorder receives the leader status; leaderelection.Recorder and
// kooper/metrics/prometheus's Recorder have this method.
type LeaderRecorder interface {
	SetLeader(name string, leading bool)
}

// Leader remembers whether this replica leads, for Readiness, and passes the
// status on. Pass it as leaderelection.Config.Recorder.
type Leader struct {
	next    LeaderRecorder
	leading atomic.Bool
}

// NewLeader returns a Leader passing the status on to next (nil: nowhere).
func NewLeader(next LeaderRecorder) *Leader { return &Leader{next: next} }

// SetLeader records the status.
func (l *Leader) SetLeader(name string, leading bool) {
	l.leading.Store(leading)
	if l.next != nil {
		l.next.SetLeader(name, leading)
	}
}

// Leading reports whether this replica leads now.
func (l *Leader) Leading() bool { return l.leading.Load() }

// Synced is what Readiness checks: a *controller.Controller.
type Synced interface {
	HasSynced() bool
}

// Readiness returns a Config.Ready: ready when every controller has synced,
// or, with leader election (leader not nil), while this replica is a
// standby. The status says which: "leading", "standby" or "synced" (without
// leader election).
func Readiness(leader *Leader, controllers ...Synced) func() (string, error) {
	return func() (string, error) {
		synced := true
		for _, c := range controllers {
			synced = synced && c.HasSynced()
		}
		switch {
		case leader == nil && synced:
			return "synced", nil
		case leader != nil && !leader.Leading():
			return "standby", nil // ready to take over
		case synced:
			return "leading", nil
		}
		return "", errors.New("leading, caches not synced yet")
	}
}
