package certs

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
)

// FileLoader serves a key pair from files and reloads it when they change,
// as when cert-manager rotates the Secret they are mounted from. It is safe
// for concurrent use.
type FileLoader struct {
	certFile, keyFile string

	mu   sync.Mutex
	cert *tls.Certificate // last pair that loaded, never nil
	seen [2]fileStamp     // stamps of certFile and keyFile taken before cert was read
}

// fileStamp tells whether a file may have changed since it was read.
type fileStamp struct {
	modTime int64 // nanoseconds since the epoch, comparable with ==
	size    int64
}

// NewFileLoader loads the PEM key pair in certFile and keyFile. It returns an
// error when either file cannot be read or the pair is invalid.
func NewFileLoader(certFile, keyFile string) (*FileLoader, error) {
	l := &FileLoader{certFile: certFile, keyFile: keyFile}
	stamps, err := l.stat()
	if err != nil {
		return nil, err
	}
	cert, err := l.load()
	if err != nil {
		return nil, err
	}
	l.cert, l.seen = cert, stamps
	return l, nil
}

// GetCertificate returns the key pair, for tls.Config.GetCertificate.
//
// It reloads the files when the modification time or size of either changed
// since the last load. When the reload fails it keeps returning the last pair
// that loaded and tries again on the next call: cert-manager writes the two
// files one after the other, so a handshake can see a new certificate with
// the old key. It never returns an error.
func (l *FileLoader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	// Stat before reading: a change made after the stat is seen by the
	// next call, never missed.
	stamps, statErr := l.stat()

	l.mu.Lock()
	defer l.mu.Unlock()
	if statErr != nil || stamps == l.seen {
		return l.cert, nil
	}
	if cert, err := l.load(); err == nil {
		l.cert, l.seen = cert, stamps
	}
	return l.cert, nil
}

// stat returns the stamps of the certificate and key files.
func (l *FileLoader) stat() ([2]fileStamp, error) {
	var stamps [2]fileStamp
	for i, name := range []string{l.certFile, l.keyFile} {
		info, err := os.Stat(name)
		if err != nil {
			return stamps, fmt.Errorf("could not stat %s: %w", name, err)
		}
		stamps[i] = fileStamp{modTime: info.ModTime().UnixNano(), size: info.Size()}
	}
	return stamps, nil
}

// load reads and parses the key pair.
func (l *FileLoader) load() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(l.certFile)
	if err != nil {
		return nil, fmt.Errorf("could not read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(l.keyFile)
	if err != nil {
		return nil, fmt.Errorf("could not read key: %w", err)
	}
	cert, err := keyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("could not load %s and %s: %w", l.certFile, l.keyFile, err)
	}
	return cert, nil
}
