package prometheus

import (
	"context"
	"fmt"
	"net/url"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// client-go reports its REST client metrics through process-wide hooks
// (k8s.io/client-go/tools/metrics.Register) that take effect once per process
// and must be set before any client runs, so this package sets them when it
// is initialised, and there is one set of collectors per process, whatever
// the number of registries. If another package (controller-runtime, say)
// was initialised first and set them, these collectors stay at zero.
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
		Buckets: DefaultBuckets(),
	}, []string{"verb", "host"}),
	rateLimiter: prom.NewHistogramVec(prom.HistogramOpts{
		Name:    "kooper_rest_client_rate_limiter_duration_seconds",
		Help:    "Time requests waited for the client's own rate limiter (QPS and burst), by verb and host.",
		Buckets: DefaultBuckets(),
	}, []string{"verb", "host"}),
}

func init() {
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      resultMetric{restClient.requests},
		RequestLatency:     latencyMetric{restClient.latency},
		RateLimiterLatency: latencyMetric{restClient.rateLimiter},
	})
}

// RegisterRESTClientMetrics registers client-go's REST client metrics on
// reg: requests by status code, method and host, and request and client rate
// limiter latency by verb and host. They count every client of the process,
// and may be registered on several registries. Hosts are the API servers the
// process talks to, a bounded set.
func RegisterRESTClientMetrics(reg prom.Registerer) error {
	for _, c := range []prom.Collector{restClient.requests, restClient.latency, restClient.rateLimiter} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("could not register the REST client metrics: %w", err)
		}
	}
	return nil
}

type resultMetric struct{ v *prom.CounterVec }

func (m resultMetric) Increment(_ context.Context, code, method, host string) {
	m.v.WithLabelValues(code, method, host).Inc()
}

type latencyMetric struct{ v *prom.HistogramVec }

func (m latencyMetric) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	m.v.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}
