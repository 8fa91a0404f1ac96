package envtest

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// syncBuffer is a bytes.Buffer safe for Progress.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAComponentWhosePortIsTakenStartsOnAnother gives a component a port
// another server already listens on, the way another cluster's process
// takes one between the pick and the bind (CI: a kube-controller-manager
// exited on "address already in use" while another process answered its
// /healthz, and the cluster waited 3m for a ServiceAccount). The other
// server answers every request with 200, so only the component's identity
// tells them apart.
func TestAComponentWhosePortIsTakenStartsOnAnother(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })
	for _, tc := range []struct {
		component string
		call      int // the pick that gets the taken port, in start order
		tls       bool
		opts      Options
		addr      func(c *Cluster) string
	}{
		{component: BinEtcd, call: 1, addr: func(c *Cluster) string { return c.etcdURL }},
		{component: BinAPIServer, call: 2, tls: true, addr: func(c *Cluster) string { return c.restCfg.Host }},
		{component: BinControllerManager, call: 3, tls: true, opts: Options{ControllerManager: true}},
	} {
		t.Run(tc.component, func(t *testing.T) {
			other := httptest.NewUnstartedServer(ok)
			other.Config.ErrorLog = log.New(io.Discard, "", 0) // the components' refused handshakes
			if tc.tls {
				other.StartTLS()
			} else {
				other.Start()
			}
			defer other.Close()
			_, port, err := net.SplitHostPort(other.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			taken, err := strconv.Atoi(port)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			calls := 0
			opts := tc.opts
			pick := func(n int) ([]int, error) {
				ports, err := freePorts(n)
				mu.Lock()
				defer mu.Unlock()
				if calls++; calls == tc.call && err == nil {
					ports[0] = taken
				}
				return ports, err
			}
			var progress syncBuffer
			opts.Progress = &progress
			c, err := startPicking(context.Background(), opts, pick)
			if err != nil {
				t.Fatalf("Start with %s's first port taken: %v", tc.component, err)
			}
			defer func() { _ = c.Stop() }()
			if want := tc.component + ": ports [" + port; !strings.Contains(progress.String(), want) {
				t.Errorf("progress did not say %q was started again:\n%s", want, progress.String())
			}
			if tc.addr != nil && strings.HasSuffix(tc.addr(c), ":"+port) {
				t.Errorf("%s is at %s, the taken port", tc.component, tc.addr(c))
			}
			client, err := kubernetes.NewForConfig(c.Config())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
				t.Errorf("the cluster does not answer: %v", err)
			}
		})
	}
}
