package certs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/operators/internal/certs"
)

func TestNewRotatorRejectsInvalidOptions(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*certs.Options)
		wantErr string
	}{
		{name: "no client", change: func(o *certs.Options) { o.Client = nil }, wantErr: "client is required"},
		{name: "no namespace", change: func(o *certs.Options) { o.Namespace = "" }, wantErr: "namespace is required"},
		{name: "no secret name", change: func(o *certs.Options) { o.SecretName = "" }, wantErr: "secret name is required"},
		{name: "no hosts", change: func(o *certs.Options) { o.Hosts = nil }, wantErr: "at least one host is required"},
		{name: "an empty host", change: func(o *certs.Options) { o.Hosts = []string{serviceHost, ""} }, wantErr: "host 1 is empty"},
		{name: "a CRD without a CRD client", change: func(o *certs.Options) { o.CRDName = crdName }, wantErr: "CRD widgets.example.com needs a CRD client"},
		{name: "a negative validity", change: func(o *certs.Options) { o.Validity = -time.Hour }, wantErr: "validity -1h0m0s is negative"},
		{name: "a negative sync interval", change: func(o *certs.Options) { o.SyncInterval = -time.Second }, wantErr: "sync interval -1s is negative"},
		{name: "a negative propagation delay", change: func(o *certs.Options) { o.PropagationDelay = -time.Second }, wantErr: "propagation delay -1s is negative"},
		{
			name: "a validity too short to rotate in",
			change: func(o *certs.Options) {
				o.Validity, o.SyncInterval, o.PropagationDelay = 15*time.Second, 2*time.Second, time.Second
			},
			wantErr: "propagation delay 1s plus 3 sync intervals of 2s leave no time to rotate within the last third of validity 15s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			opts := options(client)
			tt.change(&opts)
			_, _, err := ensure(context.Background(), opts)
			if !errors.Is(err, certs.ErrInvalidOptions) {
				t.Fatalf("got error %v, want one wrapping ErrInvalidOptions", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %q, want one containing %q", err, tt.wantErr)
			}
			if got := len(client.Actions()); got != 0 {
				t.Errorf("got %d API calls, want 0", got)
			}
		})
	}
}
