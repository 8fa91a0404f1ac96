package procnode

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeKind is which of a container's probes a result is for.
type probeKind string

const (
	startupProbe   probeKind = "Startup"
	livenessProbe  probeKind = "Liveness"
	readinessProbe probeKind = "Readiness"
)

// probeResult is a probe's state changing: it passed successThreshold
// times in a row, or failed failureThreshold times in a row.
type probeResult struct {
	kind probeKind
	ok   bool
	msg  string
}

// runProbe executes p as the kubelet does: after initialDelaySeconds,
// every periodSeconds, each attempt bounded by timeoutSeconds, reporting
// a change of state once successThreshold attempts in a row passed or
// failureThreshold failed; failed also reports each failure, for the
// Unhealthy Event. It returns when ctx is done.
func runProbe(ctx context.Context, kind probeKind, p *corev1.Probe, podIP string, c *corev1.Container, version string,
	report func(probeResult), failed func(msg string)) {
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	success, failure := int(max(p.SuccessThreshold, 1)), int(max(p.FailureThreshold, 1))
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	var state *bool
	passes, fails := 0, 0
	for {
		ok, msg := check(ctx, p, podIP, c, version, timeout)
		if ctx.Err() != nil {
			return
		}
		if ok {
			passes, fails = passes+1, 0
		} else {
			passes, fails = 0, fails+1
			failed(msg)
		}
		switch {
		case ok && passes >= success && (state == nil || !*state):
			state = &ok
			report(probeResult{kind: kind, ok: true})
		case !ok && fails >= failure && (state == nil || *state):
			state = &ok
			report(probeResult{kind: kind, ok: false, msg: msg})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// check makes one attempt of p.
func check(ctx context.Context, p *corev1.Probe, podIP string, c *corev1.Container, version string, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.HTTPGet != nil:
		return httpCheck(ctx, p.HTTPGet, podIP, c, version)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return false, err.Error()
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, fmt.Sprintf("dial tcp %s:%d: %v", host, port, err)
		}
		_ = conn.Close()
		return true, ""
	}
	return false, "procnode runs httpGet and tcpSocket probes only (exec and grpc: unsupported)"
}

func httpCheck(ctx context.Context, g *corev1.HTTPGetAction, podIP string, c *corev1.Container, version string) (bool, string) {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return false, err.Error()
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
	if parsed, err := url.Parse(g.Path); err == nil {
		u.Path, u.RawQuery = parsed.Path, parsed.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/"+version)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if h.Name == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Set(h.Name, h.Value)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe certificates either
		DisableKeepAlives: true,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return false, fmt.Sprintf("Get %q: %v", u, err)
	}
	_, _ = io.CopyN(io.Discard, resp.Body, 10<<10)
	_ = resp.Body.Close()
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		return true, ""
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

// resolvePort is a probe's port: a number, or the name of one of the
// container's ports.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("the container has no port named %q", p.StrVal)
}
