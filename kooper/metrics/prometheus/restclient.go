package prometheus

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// restClient holds client-go's REST client metrics. client-go reports them
// through process-wide hooks (k8s.io/client-go/tools/metrics), so there is
// one set of collectors per process, whatever the number of registries.
var restClient = struct {
	requests    *prom.CounterVec
	latency     *prom.HistogramVec
	rateLimiter *prom.HistogramVec
}{
	requests: prom.NewCounterVec(prom.CounterOpts{
		Name: "kooper_rest_client_requests_total",
		Help: "Requests to the API server, by status code, method and host.",
	}, []string{"code", "method", "host"}),
	latency: prom.NewHistogramVec(prom.HistogramOpts{
		Name:    "kooper_rest_client_request_duration_seconds",
		Help:    "Latency of requests to the API server, by verb and host.",
		Buckets: defaultBuckets(),
	}, []string{"verb", "host"}),
	rateLimiter: prom.NewHistogramVec(prom.HistogramOpts{
		Name:    "kooper_rest_client_rate_limiter_duration_seconds",
		Help:    "Time requests waited for the client's own rate limiter (QPS and burst), by verb and host.",
		Buckets: defaultBuckets(),
	}, []string{"verb", "host"}),
}

// restClientHooks are the hooks RegisterRESTClientMetrics gives client-go.
var restClientHooks = struct {
	result               resultMetric
	latency, rateLimiter latencyMetric
}{
	result:      resultMetric{restClient.requests},
	latency:     latencyMetric{restClient.latency},
	rateLimiter: latencyMetric{restClient.rateLimiter},
}

// RegisterRESTClientMetrics registers client-go's REST client metrics on
// reg: requests by status code, method and host, and request and client rate
// limiter latency by verb and host. Hosts are the API servers the process
// talks to, a bounded set.
//
// client-go reports these through process-wide hooks
// (k8s.io/client-go/tools/metrics.Register), which it reads at every request
// and lets be set once per process. The first call sets them, so the
// metrics count the requests of every client of the process from then on,
// not those made before; later calls register the same collectors on another
// registry. Call it at start-up, before any client runs: client-go reads the
// hooks without synchronisation, so setting them while another goroutine
// makes requests is a data race. Nothing else in Kooper sets the hooks: a
// program that never calls it keeps client-go's (which record nothing) or
// whatever another package set.
//
// If another package set the hooks first (controller-runtime's pkg/metrics
// and k8s.io/component-base/metrics/prometheus/restclient do so when they
// are initialised), client-go keeps that package's and ignores these, which
// would stay at zero: RegisterRESTClientMetrics then registers nothing and
// returns an error saying so. That package's own metrics count the requests
// instead.
func RegisterRESTClientMetrics(reg prom.Registerer) error {
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      restClientHooks.result,
		RequestLatency:     restClientHooks.latency,
		RateLimiterLatency: restClientHooks.rateLimiter,
	})
	// Register did nothing if it had been called before: by an earlier call
	// of this function, or by another package.
	if clientmetrics.RequestResult != clientmetrics.ResultMetric(restClientHooks.result) ||
		clientmetrics.RequestLatency != clientmetrics.LatencyMetric(restClientHooks.latency) ||
		clientmetrics.RateLimiterLatency != clientmetrics.LatencyMetric(restClientHooks.rateLimiter) {
		return errRESTClientHooksTaken
	}
	for _, c := range []prom.Collector{restClient.requests, restClient.latency, restClient.rateLimiter} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("could not register the REST client metrics: %w", err)
		}
	}
	return nil
}

var errRESTClientHooksTaken = errors.New("could not register the REST client metrics: " +
	"another package set client-go's metrics hooks (k8s.io/client-go/tools/metrics.Register) first, " +
	"so these would stay at zero")

type resultMetric struct{ v *prom.CounterVec }

func (m resultMetric) Increment(_ context.Context, code, method, host string) {
	m.v.WithLabelValues(code, method, host).Inc()
}

type latencyMetric struct{ v *prom.HistogramVec }

func (m latencyMetric) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	m.v.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}
