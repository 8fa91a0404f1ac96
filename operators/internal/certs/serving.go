package certs

import (
	"context"
	"crypto/tls"
	"path/filepath"
)

// Serving returns the TLS configuration of a webhook server and what stops
// keeping its certificate: with certDir, the files tls.crt and tls.key
// there (a cert-manager Secret mounted as files, or the dev cluster's),
// reloaded when they change, and opts is not used; without, a self-signed
// certificate kept in opts' Secret, which this replica follows and renews
// in turn with the others (a Rotator run in the background) until stop is
// called. stop waits for the rotation to end; call it once the server has
// stopped.
func Serving(ctx context.Context, certDir string, opts Options) (_ *tls.Config, stop func(), _ error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if certDir != "" {
		loader, err := NewFileLoader(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
		if err != nil {
			return nil, nil, err
		}
		cfg.GetCertificate = loader.GetCertificate
		return cfg, func() {}, nil
	}
	rotator, err := NewRotator(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	cfg.GetCertificate = rotator.GetCertificate
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rotator.Run(ctx)
	}()
	return cfg, func() { cancel(); <-done }, nil
}
