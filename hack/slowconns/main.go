// Command slowconns measures how kooper/health's TLS server (the one the
// metrics endpoints and the pod-terminator's webhook use) deals with slow
// clients: it opens -n TLS connections to a server on 127.0.0.1, sends
// each a partial request, and counts how many the server still holds open
// -wait later.
//
//	go run ./hack/slowconns -mode body -n 1500 -wait 35s
//
// Modes: header (half a request header, then nothing) and body (whole
// headers announcing a body, then nothing).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kooperkit/kooper/kooper/health"
)

func main() {
	n := flag.Int("n", 1500, "connections to open")
	wait := flag.Duration("wait", 35*time.Second, "how long after dialing a connection is checked")
	mode := flag.String("mode", "body", "header: half a request header; body: headers announcing a body that never comes")
	flag.Parse()
	requests := map[string]string{
		"header": "POST / HTTP/1.1\r\nHost: x\r\n",
		"body":   "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
	}
	request, ok := requests[*mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "slowconns: unknown -mode %q\n", *mode)
		os.Exit(2)
	}
	if err := run(*n, *wait, *mode, request); err != nil {
		fmt.Fprintln(os.Stderr, "slowconns:", err)
		os.Exit(1)
	}
}

func run(n int, wait time.Duration, mode, request string) error {
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	s, err := health.ServeTLS("127.0.0.1:0", http.NewServeMux(), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil)
	if err != nil {
		return err
	}
	defer s.Stop()
	var (
		wg             sync.WaitGroup
		open, failures atomic.Int64
	)
	start := time.Now()
	for range n {
		wg.Go(func() {
			c, err := tls.Dial("tcp", s.Addr(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // our own throwaway certificate
			if err != nil {
				failures.Add(1)
				return
			}
			defer c.Close()
			if _, err := io.WriteString(c, request); err != nil {
				failures.Add(1)
				return
			}
			if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
				failures.Add(1)
				return
			}
			// The server closing the connection, or answering it, ends the
			// read; only a connection it still holds times out.
			_, err = c.Read(make([]byte, 1))
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				open.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("%d slow TLS connections (mode %s): %d still open %s after dialing, %d failed (%.1fs)\n",
		n, mode, open.Load(), wait, failures.Load(), time.Since(start).Seconds())
	return nil
}

// selfSigned returns a certificate for 127.0.0.1, valid for an hour.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("could not generate a key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "slowconns"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("could not create a certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
