package procnode

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCheck(t *testing.T) {
	var gotAgent string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAgent = r.Header.Get("User-Agent")
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	for _, tt := range []struct {
		name string
		p    corev1.ProbeHandler
		ok   bool
		msg  string
	}{
		{"200", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("http")}}, true, ""},
		{"redirect", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/redirect", Port: intstr.FromInt32(int32(port))}}, true, ""},
		{"404", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/nope", Port: intstr.FromString("http")}}, false, "statuscode: 404"},
		{"unknown port name", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("metrics")}}, false, `no port named "metrics"`},
		{"tcp", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}, true, ""},
		{"exec", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, false, "unsupported"},
	} {
		ok, msg := check(context.Background(), &corev1.Probe{ProbeHandler: tt.p}, host, c, "1.37", time.Second)
		if ok != tt.ok || !strings.Contains(msg, tt.msg) {
			t.Errorf("%s: got %v %q, want %v and %q", tt.name, ok, msg, tt.ok, tt.msg)
		}
	}
	if gotAgent != "kube-probe/1.37" {
		t.Errorf("User-Agent %q, want kube-probe/1.37", gotAgent)
	}
}

// A probe reports a change of state only after its threshold, and each
// failure.
func TestRunProbeThresholds(t *testing.T) {
	var mu sync.Mutex
	healthy := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: 1, FailureThreshold: 2}
	results := make(chan probeResult, 10)
	failures := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runProbe(ctx, livenessProbe, p, host, &corev1.Container{}, "1.37", func(r probeResult) { results <- r }, func(m string) { failures <- m })
	}()
	if r := <-results; !r.ok {
		t.Fatalf("first result %+v, want ok", r)
	}
	mu.Lock()
	healthy = false
	mu.Unlock()
	began := time.Now()
	r := <-results
	if r.ok || !strings.Contains(r.msg, "statuscode: 503") {
		t.Fatalf("got %+v, want a failure", r)
	}
	if len(failures) != 2 {
		t.Errorf("%d failures reported before the state changed, want failureThreshold 2", len(failures))
	}
	if time.Since(began) < 500*time.Millisecond {
		t.Errorf("the state changed after %s: one failure is below the threshold", time.Since(began))
	}
	cancel()
	<-done
}
