package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The webhook directory holds a key pair that loads, signed by its ca.crt
// for the loopback addresses only, with the key readable by the user only;
// what a previous run left there is gone.
func TestTheWebhookCertificateIsTrustedForLoopbackOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), webhookDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "left-by-a-killed-run")
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := writeWebhookCerts(dir, now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("got %v for a file left in %s, want it removed", err, dir)
	}

	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, webhookCert), filepath.Join(dir, webhookKey))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, webhookCA))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", webhookCA)
	}
	if fi, err := os.Stat(filepath.Join(dir, webhookKey)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("got %v, %v for the key, want mode -rw-------", fi.Mode(), err)
	}

	tests := []struct {
		name    string
		host    string
		at      time.Time
		trusted bool
	}{
		{name: "127.0.0.1, where the operator listens", host: "127.0.0.1", at: now, trusted: true},
		{name: "::1", host: "::1", at: now, trusted: true},
		{name: "localhost", host: "localhost", at: now, trusted: true},
		{name: "another address of the machine", host: "10.0.0.1", at: now},
		{name: "a Service's name", host: "pod-terminator-webhook.kooper-pod-terminator.svc", at: now},
		{name: "127.0.0.1 in a year and a day", host: "127.0.0.1", at: now.Add(webhookCertTTL + 24*time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: tt.host, Roots: roots, CurrentTime: tt.at})
			if tt.trusted && err != nil {
				t.Errorf("got %v, want the certificate trusted for %s", err, tt.host)
			}
			if !tt.trusted && err == nil {
				t.Errorf("got the certificate trusted for %s, want it refused", tt.host)
			}
		})
	}
}
