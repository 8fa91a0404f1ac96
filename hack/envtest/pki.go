package envtest

import (
	"crypto"
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

// pki is a throw-away certificate authority and the key pairs a control
// plane needs, written as PEM files in one directory. ECDSA P-256 keys keep
// generation to milliseconds.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
	serial int64
}

// keyPair is a certificate and key, PEM encoded and written to disk.
type keyPair struct {
	certPEM, keyPEM   []byte
	certFile, keyFile string
}

func newPKI(dir string) (*pki, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("could not generate the CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kooper-devcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("could not create the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("could not parse the CA certificate: %w", err)
	}
	p := &pki{dir: dir, ca: ca, caKey: key, serial: 1, caPEM: pemBlock("CERTIFICATE", der)}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := p.write("ca.crt", p.caPEM); err != nil {
		return nil, err
	}
	return p, p.write("ca.key", keyPEM)
}

// issue signs a certificate for name: a client certificate with the given
// organizations (groups), or a serving certificate when hosts are given.
func (p *pki) issue(name string, orgs []string, hosts []string) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("could not generate the %s key: %w", name, err)
	}
	p.serial++
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: name, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("could not sign the %s certificate: %w", name, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	kp := keyPair{
		certPEM: pemBlock("CERTIFICATE", der), keyPEM: keyPEM,
		certFile: filepath.Join(p.dir, name+".crt"), keyFile: filepath.Join(p.dir, name+".key"),
	}
	if err := p.write(name+".crt", kp.certPEM); err != nil {
		return keyPair{}, err
	}
	return kp, p.write(name+".key", kp.keyPEM)
}

// serviceAccountKeys writes the key pair that signs service account tokens.
func (p *pki) serviceAccountKeys() (pub, priv string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("could not generate the service account key: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("could not encode the service account public key: %w", err)
	}
	if err := p.write("sa.key", keyPEM); err != nil {
		return "", "", err
	}
	if err := p.write("sa.pub", pemBlock("PUBLIC KEY", pubDER)); err != nil {
		return "", "", err
	}
	return filepath.Join(p.dir, "sa.pub"), filepath.Join(p.dir, "sa.key"), nil
}

func (p *pki) file(name string) string { return filepath.Join(p.dir, name) }

func (p *pki) write(name string, data []byte) error {
	if err := os.WriteFile(filepath.Join(p.dir, name), data, 0o600); err != nil {
		return fmt.Errorf("could not write %s: %w", name, err)
	}
	return nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("could not encode a private key: %w", err)
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
