package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// clockSkew backdates NotBefore, so a peer whose clock is slightly behind
// ours already accepts a certificate issued just now. A short validity (in
// tests) is backdated by a tenth of itself at most, so that most of it is
// still ahead.
const clockSkew = time.Minute

// bundle is one issuance: a serving key pair and the CA that signed it, in
// PEM.
type bundle struct {
	certPEM, keyPEM, caPEM []byte
}

// generate issues a new CA and a serving certificate for hosts signed by it,
// both valid from now (minus clockSkew) for validity.
func generate(hosts []string, now time.Time, validity time.Duration) (bundle, error) {
	notBefore, notAfter := now.Add(-min(clockSkew, validity/10)), now.Add(validity)

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

// pair is a serving key pair in PEM, as stored in the Secret.
type pair struct {
	certPEM, keyPEM []byte
}

// empty tells whether the Secret holds no such pair.
func (p pair) empty() bool { return len(p.certPEM) == 0 && len(p.keyPEM) == 0 }

// verify parses p and checks that it can be served at now: the key matches
// the certificate, which is signed by one of cas and valid at now. It
// returns the key pair and when it is due for renewal: once any certificate
// of its chain is in the last third of its validity, so that the next one
// has time to be published before this one expires.
func (p pair) verify(cas []*x509.Certificate, now time.Time) (*tls.Certificate, time.Time, error) {
	cert, err := keyPair(p.certPEM, p.keyPEM)
	if err != nil {
		return nil, time.Time{}, err
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	chains, err := cert.Leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("could not verify certificate against the ca bundle: %w", err)
	}
	var renewAt time.Time
	for _, c := range chains[0] {
		at := c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 3)
		if renewAt.IsZero() || at.Before(renewAt) {
			renewAt = at
		}
	}
	return cert, renewAt, nil
}

// covers returns an error naming the first of hosts cert is not valid for.
func covers(cert *tls.Certificate, hosts []string) error {
	for _, h := range hosts {
		if err := cert.Leaf.VerifyHostname(h); err != nil {
			return fmt.Errorf("certificate does not cover host: %w", err)
		}
	}
	return nil
}

// parseCAs returns the certificates of a PEM bundle, skipping what does not
// parse: a damaged entry must not hide the others.
func parseCAs(bundlePEM []byte) []*x509.Certificate {
	var cas []*x509.Certificate
	for rest := bundlePEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return cas
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			cas = append(cas, c)
		}
	}
}

// encodeCAs returns cas as a PEM bundle, in order.
func encodeCAs(cas []*x509.Certificate) []byte {
	var out []byte
	for _, c := range cas {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// unexpired returns the certificates of cas not expired at now (x509 counts
// NotAfter itself as valid): one that expired can no longer verify any
// certificate a replica serves.
func unexpired(cas []*x509.Certificate, now time.Time) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range cas {
		if !now.After(c.NotAfter) {
			out = append(out, c)
		}
	}
	return out
}
