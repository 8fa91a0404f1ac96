package integration_test

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// With -metrics-secure-addr, as the Deployment runs it, /metrics is served
// over HTTPS to Prometheus's ServiceAccount only: the operator, running as
// its own ServiceAccount with the RBAC of manifests/rbac/pod-terminator
// (system:auth-delegator, kooper-pod-terminator-metrics-reader), has the
// API server review each token. /healthz and /readyz stay plain.
func TestSecureMetricsAreServedToPrometheusOnly(t *testing.T) {
	applyManifests(t)
	httpAddr, secureAddr := e2etest.FreeAddr(t), e2etest.FreeAddr(t)
	cfg := operator.Config{
		REST:              e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100),
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
