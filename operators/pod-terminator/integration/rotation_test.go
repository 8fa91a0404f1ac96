package integration_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// Two replicas share the webhook's self-signed certificate, valid for 15
// seconds, behind a round-robin forwarder (the Service, in a cluster). While
// the certificate rotates at least twice, PodTerminators are created,
// updated and deleted, and the operator adds and removes its finalizer:
// with failurePolicy Fail, not one of those admission calls may be refused.
func TestWebhookCertificateRotatesWithoutRefusedCalls(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	terminators := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()

	// The Role lets the operator use this one Secret name only: start from
	// none, so the short-lived certificate is issued here, and leave none
	// for the next test.
	secrets := admin.CoreV1().Secrets(operator.DefaultNamespace)
	deleteSecret := func() {
		err := secrets.Delete(context.Background(), operator.DefaultWebhookSecret, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("could not delete the webhook secret: %v", err)
		}
	}
	deleteSecret()
	t.Cleanup(deleteSecret)

	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rotation-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteNamespaceAtEnd(t, admin, ns.Name)

	addrs := []string{e2etest.FreeAddr(t), e2etest.FreeAddr(t)}
	fwd := startForwarder(t, addrs...)
	registerWebhook(t, admin, fwd.addr())

	logs := &lockedBuffer{}
	for i, addr := range addrs {
		cfg := operator.Config{
			REST: e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100),
			Webhook: operator.Webhook{
				Addr: addr, Hosts: []string{"127.0.0.1"},
				CertValidity: 15 * time.Second, CertSyncInterval: 200 * time.Millisecond, CertPropagationDelay: 2 * time.Second,
			},
			Logger: log.NewStd(io.MultiWriter(logs, t.Output()), log.StdOptions{}).With("replica", i),
		}
		e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
	}

	spec := func(percent int32) chaosv1beta1.PodTerminatorSpec {
		return chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "nothing-here"}},
			Namespaces:  []string{ns.Name},
			Period:      &metav1.Duration{Duration: 60 * time.Second},
			Termination: chaosv1beta1.Termination{Percent: percent},
			DryRun:      true,
		}
	}
	// Until the API server has the injected CA, calls fail with a TLS
	// error, as at any installation: wait for the first answer.
	e2etest.Eventually(t, 30*time.Second, "the webhook answers", func() bool {
		_, err := terminators.Create(ctx, &chaosv1beta1.PodTerminator{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: spec(10)}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil
	})
	logsBefore := logs.Len()

	var refused []string
	call := func(what string, err error) {
		t.Helper()
		switch {
		case err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		case refusal(err.Error()):
			refused = append(refused, fmt.Sprintf("%s: %v", what, err))
		default:
			t.Fatalf("%s: %v", what, err)
		}
	}
	cas := map[string]bool{}
	var created []string
	began, start := time.Now(), time.Now()
	for i := 0; len(cas) < 3 || time.Since(start) < 5*time.Second; i++ {
		if time.Since(began) > 3*time.Minute {
			t.Fatalf("saw %d CAs in 3 minutes, want 3 (two rotations)", len(cas))
		}
		if ca := servingCA(t, admin); ca != "" && !cas[ca] {
			cas[ca] = true
			t.Logf("serving CA %d after %s: %s", len(cas), time.Since(start).Round(time.Millisecond), ca)
			start = time.Now() // and keep writing a while after each change
		}

		_, err := terminators.Create(ctx, &chaosv1beta1.PodTerminator{ObjectMeta: metav1.ObjectMeta{Name: "dry-run"}, Spec: spec(10)}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		call("dry-run create", err)

		name := fmt.Sprintf("%s-%d", ns.Name, i)
		_, err = terminators.Create(ctx, &chaosv1beta1.PodTerminator{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec(10)}, metav1.CreateOptions{})
		call("create "+name, err)
		if err == nil {
			created = append(created, name)
		}
		if i > 0 && len(created) > 1 {
			prev := created[len(created)-2]
			if pt, err := terminators.Get(ctx, prev, metav1.GetOptions{}); err == nil {
				pt.Spec = spec(20)
				_, err = terminators.Update(ctx, pt, metav1.UpdateOptions{})
				call("update "+prev, err)
			}
			// The operator removes its finalizer: an update through the
			// webhook too.
			call("delete "+prev, terminators.Delete(ctx, prev, metav1.DeleteOptions{}))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, name := range created {
		call("delete "+name, terminators.Delete(ctx, name, metav1.DeleteOptions{}))
	}
	e2etest.Eventually(t, 60*time.Second, "the operator has removed its finalizer from every PodTerminator", func() bool {
		for _, name := range created {
			if _, err := terminators.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})

	// The operator's own writes (the finalizer) are refused the same way;
	// it logs and retries them.
	for _, line := range strings.Split(logs.String()[logsBefore:], "\n") {
		if refusal(line) {
			refused = append(refused, "operator: "+line)
		}
	}
	if len(refused) > 0 {
		t.Errorf("got %d refused admission calls, want 0; first: %s", len(refused), refused[0])
	}
	if len(cas) < 3 {
		t.Errorf("got %d CAs served, want at least 3 (two rotations)", len(cas))
	}
	conns := fwd.connections()
	t.Logf("%d PodTerminators written; forwarder connections per replica: %v", len(created), conns)
	for i, n := range conns {
		if n == 0 {
			t.Errorf("got no connection to replica %d, want the API server to call both", i)
		}
	}
}

// refusal tells whether an error message is an admission call that failed
// to reach the webhook or to trust it.
func refusal(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"failed calling webhook", "x509:", "tls:", "handshake", "unknown authority"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// servingCA returns the key ID of the CA that signed the certificate in the
// webhook's Secret, or "" while there is none.
func servingCA(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	s, err := client.CoreV1().Secrets(operator.DefaultNamespace).Get(context.Background(), operator.DefaultWebhookSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if block == nil {
		return ""
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(c.AuthorityKeyId)
}

// forwarder hands each TCP connection to the next backend in turn, as a
// Service spreads the API server's calls over the replicas.
type forwarder struct {
	l        net.Listener
	backends []string
	accepted []atomic.Int64

	mu     sync.Mutex
	open   map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// startForwarder listens on 127.0.0.1 until the test ends.
func startForwarder(t *testing.T, backends ...string) *forwarder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{l: l, backends: backends, accepted: make([]atomic.Int64, len(backends)), open: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() {
		_ = l.Close()
		f.mu.Lock()
		f.closed = true
		for c := range f.open {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *forwarder) addr() string { return f.l.Addr().String() }

func (f *forwarder) connections() []int64 {
	out := make([]int64, len(f.accepted))
	for i := range f.accepted {
		out[i] = f.accepted[i].Load()
	}
	return out
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for i := 0; ; i++ {
		c, err := f.l.Accept()
		if err != nil {
			return // closed
		}
		n := i % len(f.backends)
		f.accepted[n].Add(1)
		f.wg.Add(1)
		go f.forward(c, f.backends[n])
	}
}

// forward copies both ways between c and backend until either side closes.
func (f *forwarder) forward(c net.Conn, backend string) {
	defer f.wg.Done()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		_ = c.Close()
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_, _ = c.Close(), b.Close()
		return
	}
	f.open[c], f.open[b] = true, true
	f.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	_, _ = c.Close(), b.Close()
	<-done
	f.mu.Lock()
	delete(f.open, c)
	delete(f.open, b)
	f.mu.Unlock()
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
