package integration_test

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
)

// With -metrics-secure-addr, as the Deployment runs it, /metrics is served
// over HTTPS to Prometheus's ServiceAccount only: the operator, running as
// its own ServiceAccount with the RBAC of manifests/rbac/multi-resource
// (system:auth-delegator, kooper-multi-resource-metrics-reader), has the
// API server review each token. /healthz and /readyz stay plain.
func TestSecureMetricsAreServedToPrometheusOnly(t *testing.T) {
	e2eManifests(t)
	httpAddr, secureAddr := e2etest.FreeAddr(t), e2etest.FreeAddr(t)
	cfg := operator.Config{
		REST:              e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 100, 200),
		HTTPAddr:          httpAddr,
		SecureMetricsAddr: secureAddr,
		Logger:            log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
	e2etest.CheckSecureMetrics(t, kubernetes.NewForConfigOrDie(cluster.Config()), e2etest.SecureMetrics{
		Account:    operator.DefaultNamespace + "/" + operator.DefaultName,
		PlainAddr:  httpAddr,
		SecureAddr: secureAddr,
	})
}
