package operator_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
)

// /healthz and /readyz stay on HTTPAddr when /metrics moves to HTTPS: the
// secure address alone is refused before anything starts.
func TestSecureMetricsNeedTheHTTPAddress(t *testing.T) {
	err := operator.Run(context.Background(), operator.Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, SecureMetricsAddr: "127.0.0.1:0"})
	if !errors.Is(err, operator.ErrInvalidConfig) {
		t.Errorf("got %v, want ErrInvalidConfig", err)
	}
}
