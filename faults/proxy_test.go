package faults

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echo starts a TCP echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn) (time.Duration, error) {
	t.Helper()
	began := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		return 0, err
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return 0, err
	}
	if string(buf) != "ping" {
		t.Fatalf("echoed %q", buf)
	}
	return time.Since(began), nil
}

func TestProxyFaults(t *testing.T) {
	p, err := NewProxy("test", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := p.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := roundTrip(t, c); err != nil {
		t.Fatal(err)
	}

	heal, _ := p.Latency(100, 0)
	if d, err := roundTrip(t, c); err != nil || d < 200*time.Millisecond {
		t.Errorf("with 100ms each way: round trip %s, %v; want at least 200ms", d, err)
	}
	heal()

	heal, _ = p.Blackhole()
	time.AfterFunc(300*time.Millisecond, heal)
	if d, err := roundTrip(t, c); err != nil || d < 300*time.Millisecond {
		t.Errorf("blackholed for 300ms: round trip %s, %v; want held, then through", d, err)
	}

	heal, _ = p.Reset()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := roundTrip(t, c); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("after Reset: %v, want a reset connection", err)
	}
	heal()
	c2, err := p.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := roundTrip(t, c2); err != nil {
		t.Errorf("a new connection after the reset healed: %v", err)
	}
}

func TestProxyStall(t *testing.T) {
	p, err := NewProxy("test", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stalled, err := p.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := roundTrip(t, stalled); err != nil {
		t.Fatal(err)
	}

	heal, _ := p.Stall()
	fresh, err := p.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := roundTrip(t, fresh); err != nil {
		t.Errorf("a connection opened during the stall: %v, want it through", err)
	}
	if _, err := stalled.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = stalled.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 4)
	if n, err := stalled.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("reading the stalled connection: %d bytes, %v; want nothing, neither closed nor reset", n, err)
	}
	heal()
	_ = stalled.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(stalled, buf); err != nil || string(buf) != "ping" {
		t.Errorf("after heal: read %q, %v; want the held ping", buf, err)
	}
	if _, err := roundTrip(t, stalled); err != nil {
		t.Errorf("the healed connection: %v, want it through", err)
	}
}
