package operator_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/operators/internal/devloop"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// A Config at odds with itself is refused before anything starts.
func TestRunRefusesAnInconsistentConfig(t *testing.T) {
	clientCfg := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name    string
		cfg     operator.Config
		wantErr error // besides ErrInvalidConfig
	}{
		{name: "no REST config", cfg: operator.Config{}},
		// /healthz and /readyz stay on HTTPAddr when /metrics moves to
		// HTTPS.
		{name: "the secure metrics address alone", cfg: operator.Config{REST: clientCfg, SecureMetricsAddr: "127.0.0.1:0"}},
		{name: "a webhook registering itself with no certificate directory",
			cfg: operator.Config{REST: clientCfg, Webhook: operator.Webhook{Addr: ":0", Register: true}}},
		{name: "a webhook registering itself on an address another machine reaches",
			cfg:     operator.Config{REST: clientCfg, Webhook: operator.Webhook{Addr: "0.0.0.0:9443", CertDir: t.TempDir(), Register: true}},
			wantErr: devloop.ErrNotLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := operator.Run(context.Background(), tt.cfg)
			if !errors.Is(err, operator.ErrInvalidConfig) {
				t.Errorf("got %v, want ErrInvalidConfig", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v, want %v", err, tt.wantErr)
			}
		})
	}
}
