package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The webhook directory (-dir/webhook) is what an operator run from a shell
// needs to serve its admission webhook to the dev cluster's API server,
// which no Service leads to it: a serving certificate for the loopback
// addresses and the CA that signed it. An operator run with -kubeconfig
// <dir>/kubeconfig finds it next to the kubeconfig
// (operators/internal/devloop, which names the same files), serves its
// webhook on 127.0.0.1 with it, and registers itself with a webhook
// configuration whose clientConfig is a URL and whose caBundle is ca.crt.
//
// The CA is made for each start and signs nothing else: its key is thrown
// away once the certificate is signed, and the cluster's own CA, which the
// API server trusts for client certificates too, never leaves the cluster's
// directory.
const (
	webhookDir     = "webhook"
	webhookCA      = "ca.crt"
	webhookCert    = "tls.crt"
	webhookKey     = "tls.key"
	webhookCertTTL = 365 * 24 * time.Hour
)

// webhookHosts are the names the serving certificate covers: an operator
// listens on a loopback address, and the API server calls it there.
var webhookHosts = []string{"127.0.0.1", "::1", "localhost"}

// writeWebhookCerts writes a new CA and a serving certificate for
// webhookHosts signed by it into dir, replacing what a previous run left:
// the CA as webhookCA, the certificate and its key as webhookCert and
// webhookKey (readable by the user only).
func writeWebhookCerts(dir string, now time.Time) error {
	caPEM, certPEM, keyPEM, err := webhookCerts(now)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("could not remove %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("could not create %s: %w", dir, err)
	}
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{
		{webhookCA, caPEM, 0o644},
		{webhookKey, keyPEM, 0o600},
		// Last: an operator that finds the certificate finds its key.
		{webhookCert, certPEM, 0o644},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.perm); err != nil {
			return fmt.Errorf("could not write %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

// webhookCerts returns, PEM encoded, a new CA certificate and a serving
// certificate for webhookHosts that it signed, with the certificate's key.
// ECDSA P-256 keeps it to milliseconds.
func webhookCerts(now time.Time) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("could not generate the webhook CA's key: %w", err)
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kooper-devcluster-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(webhookCertTTL),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("could not create the webhook CA's certificate: %w", err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, nil, nil, fmt.Errorf("could not parse the webhook CA's certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("could not generate the webhook's key: %w", err)
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: webhookHosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(webhookCertTTL),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range webhookHosts {
		if ip := net.ParseIP(h); ip != nil {
			serving.IPAddresses = append(serving.IPAddresses, ip)
		} else {
			serving.DNSNames = append(serving.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, serving, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("could not sign the webhook's certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("could not encode the webhook's key: %w", err)
	}
	return pemBlock("CERTIFICATE", caDER), pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
