package health_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kooperkit/kooper/kooper/health"
)

// selfSigned returns a server TLS config for 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// A slow client: it opens a connection and then stalls at some point.
type slowClient struct {
	name string
	tls  bool
	// stall does what the client does before going silent, on a
	// connection already dialled (and, with tls, not yet handshaken).
	stall func(t *testing.T, c net.Conn) net.Conn
}

func tlsHandshake(t *testing.T, c net.Conn) net.Conn {
	t.Helper()
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test against our own self-signed server
	if err := tc.Handshake(); err != nil {
		t.Errorf("handshake: %v", err)
	}
	return tc
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Errorf("write: %v", err)
	}
}

// readRequestAnswer reads one response to a GET /healthz on c.
func readAnswer(t *testing.T, c net.Conn) {
	t.Helper()
	buf := make([]byte, 1024)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Errorf("got %q, %v, want an HTTP 200 answer", buf[:n], err)
	}
	_ = c.SetReadDeadline(time.Time{})
}

var slowClients = []slowClient{
	{"sends nothing", false, func(_ *testing.T, c net.Conn) net.Conn { return c }},
	{"sends half a header", false, func(t *testing.T, c net.Conn) net.Conn {
		write(t, c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		return c
	}},
	{"sends headers and half the body it announced", false, func(t *testing.T, c net.Conn) net.Conn {
		write(t, c, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf")
		return c
	}},
	{"stays idle after a request", false, func(t *testing.T, c net.Conn) net.Conn {
		write(t, c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		readAnswer(t, c)
		return c
	}},
	{"never starts the TLS handshake", true, func(_ *testing.T, c net.Conn) net.Conn { return c }},
	{"never finishes the TLS handshake", true, func(t *testing.T, c net.Conn) net.Conn {
		// The first bytes of a ClientHello record: type, version, length.
		if _, err := c.Write([]byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01}); err != nil {
			t.Errorf("write: %v", err)
		}
		return c
	}},
	{"sends half a header over TLS", true, func(t *testing.T, c net.Conn) net.Conn {
		tc := tlsHandshake(t, c)
		write(t, tc, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		return tc
	}},
	{"stays idle after a request over TLS", true, func(t *testing.T, c net.Conn) net.Conn {
		tc := tlsHandshake(t, c)
		write(t, tc, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		readAnswer(t, tc)
		return tc
	}},
}

// Before the limits, only the header read was bounded (10s): a connection
// idle between requests, or one reading a body, stayed open forever.
func TestTheServerClosesSlowConnections(t *testing.T) {
	defer goleak.VerifyNone(t)
	short := health.Limits{ReadHeader: 300 * time.Millisecond, Read: time.Second, Write: time.Second, Idle: 500 * time.Millisecond, MaxHeaderBytes: 32 << 10}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	plain, err := health.ServeWithin("127.0.0.1:0", mux, nil, short)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	tlsSrv, err := health.ServeWithin("127.0.0.1:0", mux, selfSigned(t), short)
	if err != nil {
		t.Fatal(err)
	}
	defer tlsSrv.Stop()

	const perClient = 25 // connections per kind of slow client
	// Generous: the limits above close every connection within ~2s.
	const bound = 20 * time.Second
	for _, sc := range slowClients {
		t.Run(sc.name, func(t *testing.T) {
			addr := plain.Addr()
			if sc.tls {
				addr = tlsSrv.Addr()
			}
			conns := make([]net.Conn, 0, perClient)
			for range perClient {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, sc.stall(t, c))
			}
			var wg sync.WaitGroup
			for i, c := range conns {
				wg.Go(func() {
					defer c.Close()
					_ = c.SetReadDeadline(time.Now().Add(bound))
					_, err := io.Copy(io.Discard, c) // nil at EOF
					if errors.Is(err, os.ErrDeadlineExceeded) {
						t.Errorf("connection %d: still open after %s, want it closed by the server", i, bound)
					}
				})
			}
			wg.Wait()
		})
	}
}

func TestTooLargeHeadersAreRefusedAndNormalRequestsServed(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv, err := health.Start(health.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	tests := []struct {
		name     string
		header   int // bytes of one extra header
		wantCode int
	}{
		{"a normal request is served", 0, http.StatusOK},
		{"a 16 KiB header is served", 16 << 10, http.StatusOK},
		{"a 64 KiB header is refused", 64 << 10, http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "http://"+srv.Addr()+"/healthz", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.header > 0 {
				req.Header.Set("X-Big", strings.Repeat("a", tt.header))
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Errorf("got %d, want %d", resp.StatusCode, tt.wantCode)
			}
		})
	}
}

// A CPU profile runs for its seconds parameter, longer than the read and
// write timeouts: it must neither be cut short nor fail.
func TestAProfileMayLastLongerThanTheTimeouts(t *testing.T) {
	defer goleak.VerifyNone(t)
	short := health.Limits{ReadHeader: 300 * time.Millisecond, Read: 500 * time.Millisecond, Write: 500 * time.Millisecond, Idle: time.Second, MaxHeaderBytes: 32 << 10}
	srv, err := health.StartWithin(health.Config{Addr: "127.0.0.1:0", EnableProfiling: true}, short)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, path := range []string{"/debug/pprof/profile?seconds=2", "/debug/pprof/trace?seconds=2"} {
		start := time.Now()
		resp, err := client.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: got %d with %d bytes (%v), want 200 with a profile", path, resp.StatusCode, len(body), err)
		}
		if took < 2*time.Second {
			t.Errorf("GET %s: took %s, want at least the 2s asked for (cut short by a timeout)", path, took)
		}
	}
}
