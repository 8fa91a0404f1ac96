// Package observe sets up what every sample operator observes the same way:
// the library's controller metrics, client-go's REST client metrics, the Go
// and process collectors, the operator's own metrics, and tracing of
// handlings and API calls when a tracer provider is given.
package observe

import (
	"fmt"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
	"github.com/kooperkit/kooper/kooper/tracing"
)

// Setup is what an operator builds its clients and controllers with.
type Setup struct {
	// REST is the client config to build clients from: a copy of the one
	// given whose clients' writes the controllers track
	// (controller.TrackWrites), instrumented for tracing if asked. It keeps the
	// given RateLimiter, if any: clientsets built from it then share that
	// limiter. A client that must wait behind no other (leader election's,
	// say) is built from a copy with RateLimiter nil and QPS and Burst of
	// its own, from which kubernetes.NewForConfig makes it a limiter alone.
	REST *rest.Config
	// Recorder records the controllers' metrics (and the leader status).
	Recorder *kooperprom.Recorder
	// Middlewares go first in every controller's handler chain: the tracing
	// span, or nothing.
	Middlewares []controller.Middleware
}

// New registers the metrics on reg, the operator's own collectors included,
// and, if tp is not nil, instruments a copy of cfg and returns the tracing
// middleware.
func New(cfg *rest.Config, reg prom.Registerer, tp trace.TracerProvider, own ...prom.Collector) (Setup, error) {
	// region: new
	// Every client built from s.REST tells the controllers what their
	// handlers write: a key is not handled again before the caches have
	// seen its handler's own writes.
	s := Setup{REST: controller.TrackWrites(cfg)}
	if tp != nil {
		tracing.InstrumentClient(s.REST, tp)
		s.Middlewares = []controller.Middleware{tracing.Middleware(tp)}
	}
	for _, c := range append(own, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})) {
		if err := reg.Register(c); err != nil {
			return Setup{}, fmt.Errorf("could not register metrics: %w", err)
		}
	}
	rec, err := kooperprom.New(reg)
	if err != nil {
		return Setup{}, fmt.Errorf("could not register the controller metrics: %w", err)
	}
	// client-go's REST client metrics are process-wide: registered once per
	// registry, they count every client of the process. The first call
	// sets client-go's hooks, so it comes before any client is built.
	if err := kooperprom.RegisterRESTClientMetrics(reg); err != nil {
		return Setup{}, err
	}
	s.Recorder = rec
	return s, nil
	// endregion: new
}

// The rates, in requests per second and burst, of the clients that get a
// rate limiter of their own (OwnLimiter) so that no flood of another
// caller's requests delays them: leader election makes a Get and an Update
// per RetryPeriod (2s) and a watch, and the secure metrics make a
// TokenReview and a SubjectAccessReview per new token (health.SecureMetrics
// keeps decisions a minute). client-go's defaults, which that work never
// reaches.
const (
	LeaseQPS     = 5
	LeaseBurst   = 10
	MetricsQPS   = 5
	MetricsBurst = 10
)

// OwnLimiter returns a copy of cfg from which a clientset made with it
// (kubernetes.NewForConfig) makes a rate limiter of qps and burst for
// itself alone: client-go makes one only when the config carries none, and
// every copy of a config that carries one (rest.CopyConfig copies it)
// shares it.
func OwnLimiter(cfg *rest.Config, qps float32, burst int) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = nil
	c.QPS, c.Burst = qps, burst
	return c
}
