package certs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kooperkit/kooper/operators/internal/certs"
)

// pair is a PEM key pair whose certificate is named cn.
type pair struct {
	cn              string
	certPEM, keyPEM []byte
}

func newPair(t *testing.T, cn string) pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("could not generate key: %v", err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    t0,
		NotAfter:     t0.Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatalf("could not create certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("could not encode key: %v", err)
	}
	return pair{
		cn:      cn,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// pairFiles are the certificate and key files of a FileLoader under test.
type pairFiles struct {
	cert, key string
	mtime     time.Time // moved forward on each write, so every write is seen
}

func newPairFiles(t *testing.T) *pairFiles {
	t.Helper()
	dir := t.TempDir()
	return &pairFiles{cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), mtime: t0}
}

// write writes data to name and moves its modification time forward
// explicitly: a filesystem with a coarse clock could otherwise show the same
// time, and size, as before the write.
func (f *pairFiles) write(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatalf("could not write %s: %v", name, err)
	}
	f.mtime = f.mtime.Add(time.Second)
	if err := os.Chtimes(name, f.mtime, f.mtime); err != nil {
		t.Fatalf("could not change times of %s: %v", name, err)
	}
}

func (f *pairFiles) writePair(t *testing.T, p pair) {
	t.Helper()
	f.write(t, f.cert, p.certPEM)
	f.write(t, f.key, p.keyPEM)
}

func commonName(t *testing.T, l *certs.FileLoader) string {
	t.Helper()
	cert, err := l.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatalf("GetCertificate: %v", err)
	}
	if cert == nil || cert.Leaf == nil {
		t.Fatal("got no certificate or no Leaf, want both")
	}
	return cert.Leaf.Subject.CommonName
}

func TestFileLoaderReloadsChangedFiles(t *testing.T) {
	a, b, c := newPair(t, "a"), newPair(t, "b"), newPair(t, "c")
	files := newPairFiles(t)
	files.writePair(t, a)
	loader, err := certs.NewFileLoader(files.cert, files.key)
	if err != nil {
		t.Fatalf("NewFileLoader: %v", err)
	}

	// Each step changes the files, then reads the pair served; steps run in
	// order, on the same loader.
	steps := []struct {
		name   string
		change func(t *testing.T)
		wantCN string
	}{
		{name: "the loaded pair is served", change: func(*testing.T) {}, wantCN: "a"},
		{name: "a new pair is served after a rewrite", change: func(t *testing.T) { files.writePair(t, b) }, wantCN: "b"},
		{name: "a garbage certificate keeps the last good pair", change: func(t *testing.T) { files.write(t, files.cert, []byte("garbage")) }, wantCN: "b"},
		{name: "a new certificate with the old key keeps the last good pair", change: func(t *testing.T) { files.write(t, files.cert, c.certPEM) }, wantCN: "b"},
		{name: "the matching key completes the new pair", change: func(t *testing.T) { files.write(t, files.key, c.keyPEM) }, wantCN: "c"},
		{name: "a removed key file keeps the last good pair", change: func(t *testing.T) {
			if err := os.Remove(files.key); err != nil {
				t.Fatalf("could not remove key: %v", err)
			}
		}, wantCN: "c"},
		{name: "the pair is served again once the files are back", change: func(t *testing.T) { files.writePair(t, a) }, wantCN: "a"},
	}
	for _, s := range steps {
		s.change(t)
		if got := commonName(t, loader); got != s.wantCN {
			t.Fatalf("%s: got certificate %q, want %q", s.name, got, s.wantCN)
		}
	}
}

func TestFileLoaderCachesUnchangedPair(t *testing.T) {
	files := newPairFiles(t)
	files.writePair(t, newPair(t, "a"))
	loader, err := certs.NewFileLoader(files.cert, files.key)
	if err != nil {
		t.Fatalf("NewFileLoader: %v", err)
	}
	first, _ := loader.GetCertificate(nil)
	second, _ := loader.GetCertificate(nil)
	if first != second {
		t.Error("got a new certificate for unchanged files, want the cached one")
	}
}

func TestNewFileLoaderFails(t *testing.T) {
	a, b := newPair(t, "a"), newPair(t, "b")
	tests := []struct {
		name    string
		cert    []byte // nil: no file
		key     []byte // nil: no file
		wantErr string
	}{
		{name: "a missing certificate file", key: a.keyPEM, wantErr: "tls.crt"},
		{name: "a missing key file", cert: a.certPEM, wantErr: "tls.key"},
		{name: "a garbage certificate", cert: []byte("garbage"), key: a.keyPEM, wantErr: "could not load"},
		{name: "a key of another pair", cert: a.certPEM, key: b.keyPEM, wantErr: "could not load"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := newPairFiles(t)
			if tt.cert != nil {
				files.write(t, files.cert, tt.cert)
			}
			if tt.key != nil {
				files.write(t, files.key, tt.key)
			}
			loader, err := certs.NewFileLoader(files.cert, files.key)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if loader != nil {
				t.Error("got a loader with the error, want none")
			}
		})
	}
}

func TestFileLoaderIsSafeForConcurrentUse(t *testing.T) {
	pairs := []pair{newPair(t, "a"), newPair(t, "b"), newPair(t, "c")}
	files := newPairFiles(t)
	files.writePair(t, pairs[0])
	loader, err := certs.NewFileLoader(files.cert, files.key)
	if err != nil {
		t.Fatalf("NewFileLoader: %v", err)
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				cert, err := loader.GetCertificate(nil)
				if err != nil || cert == nil || cert.Leaf == nil {
					t.Errorf("got certificate %v and error %v, want a certificate with Leaf", cert, err)
					return
				}
				if cn := cert.Leaf.Subject.CommonName; !slices.ContainsFunc(pairs, func(p pair) bool { return p.cn == cn }) {
					t.Errorf("got certificate %q, want one of a, b, c", cn)
					return
				}
			}
		})
	}
	// Rewrite the files while the readers run: they see half-written pairs.
	for i := range 30 {
		files.writePair(t, pairs[i%len(pairs)])
	}
	close(done)
	wg.Wait()

	if got, want := commonName(t, loader), pairs[29%len(pairs)].cn; got != want {
		t.Errorf("got certificate %q after the last write, want %q", got, want)
	}
}
