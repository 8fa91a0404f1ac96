package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// clockSkew backdates NotBefore, so a peer whose clock is slightly behind
// ours already accepts a certificate issued just now.
const clockSkew = time.Minute

// bundle is the PEM content of the Secret: the serving key pair and the CA
// that signed it.
type bundle struct {
	certPEM, keyPEM, caPEM []byte
}

// generate issues a new CA and a serving certificate for hosts signed by it,
// both valid from now (minus clockSkew) for validity.
func generate(hosts []string, now time.Time, validity time.Duration) (bundle, error) {
	notBefore, notAfter := now.Add(-clockSkew), now.Add(validity)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return bundle{}, fmt.Errorf("could not generate ca key: %w", err)
	}
	caSerial, err := randomSerial()
	if err != nil {
		return bundle{}, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: hosts[0] + " webhook ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // signs serving certificates only, no intermediate CA
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return bundle{}, fmt.Errorf("could not create ca certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return bundle{}, fmt.Errorf("could not parse ca certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return bundle{}, fmt.Errorf("could not generate serving key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return bundle{}, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hosts[0]},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		return bundle{}, fmt.Errorf("could not create serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return bundle{}, fmt.Errorf("could not encode serving key: %w", err)
	}
	return bundle{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}, nil
}

// randomSerial returns a random positive serial number of up to 128 bits.
func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("could not generate serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // never 0
}

// usable parses b and checks that it can keep serving hosts at now: the key
// matches the certificate, which is signed by the CA, covers every host, and
// neither the certificate nor its CA is in the last third of its validity.
// The error says why b must be replaced.
func (b bundle) usable(hosts []string, now time.Time) (*tls.Certificate, error) {
	cert, err := keyPair(b.certPEM, b.keyPEM)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.caPEM) {
		return nil, errors.New("ca certificate has no valid pem block")
	}
	chains, err := cert.Leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("could not verify certificate against ca: %w", err)
	}
	for _, h := range hosts {
		if err := cert.Leaf.VerifyHostname(h); err != nil {
			return nil, fmt.Errorf("certificate does not cover host: %w", err)
		}
	}
	// Verify only returns chains valid at now; renew early, while every
	// certificate of the chain still has more than a third of its life left,
	// so that a restart some time before expiry is enough.
	for _, c := range chains[0] {
		if renewAt := c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 3); !now.Before(renewAt) {
			return nil, fmt.Errorf("certificate %q is due for renewal since %s", c.Subject.CommonName, renewAt.Format(time.RFC3339))
		}
	}
	return cert, nil
}

// keyPair parses a PEM key pair and makes sure its Leaf is set.
func keyPair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("could not parse key pair: %w", err)
	}
	if cert.Leaf == nil { // tls.X509KeyPair leaves it nil with GODEBUG=x509keypairleaf=0
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("could not parse certificate: %w", err)
		}
		cert.Leaf = leaf
	}
	return &cert, nil
}
