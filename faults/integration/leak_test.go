package integration_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/faults"
	"github.com/kooperkit/kooper/kooper/controller"
)

// A controller run in this process through a proxy whose connections are
// reset, delayed and blackholed leaves, once Run returns, no goroutine
// running and no more connections open than before.
func TestNoLeakAfterFaults(t *testing.T) {
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns := fmt.Sprintf("leak-%d-%d", os.Getpid(), runs.Add(1))
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	host, _ := url.Parse(cluster.Config().Host)
	proxy, err := faults.NewProxy("leak", host.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	_, port, _ := strings.Cut(proxy.Addr(), ":")

	cfg := cluster.Config()
	cfg.Host = "https://" + proxy.Addr()
	// A transport of its own (no client-go cache shared with the rest of
	// the test), closed after Run as an operator's process would exit.
	cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	client := kubernetes.NewForConfigOrDie(cfg)
	cms := client.CoreV1().ConfigMaps(ns)
	var handled atomic.Int64
	var lastRV atomic.Value // of cm-0
	lastRV.Store("")
	c, err := controller.New(controller.Config{
		Name: "leak", Retriever: controller.WithWatchIdleTimeout(controller.NewRetriever(cms.List, cms.Watch), 5*time.Second),
		Handler: controller.HandlerFunc(func(_ context.Context, obj kruntime.Object) error {
			handled.Add(1)
			if cm := obj.(*corev1.ConfigMap); cm.Name == "cm-0" {
				lastRV.Store(cm.ResourceVersion)
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()

	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 3 {
		for _, inject := range []func() (func(), error){proxy.Reset, func() (func(), error) { return proxy.Latency(500, 100) }, proxy.Blackhole} {
			heal, err := inject()
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
			heal()
			cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.Data = map[string]string{"round": strconv.Itoa(round)}
			if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	final, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	for lastRV.Load() != final.ResourceVersion {
		if time.Since(healed) > 90*time.Second {
			t.Fatalf("cm-0's final version %s not handled 90s after the last fault (last handled %s)", final.ResourceVersion, lastRV.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the final version was handled %s after the last fault", time.Since(healed).Round(time.Millisecond))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The client keeps one connection in its pool, as any client does; the
	// library keeps no goroutine, and the faults (each a broken watch or
	// a relist) added no connection.
	deadline := time.Now().Add(10 * time.Second)
	for {
		open := established(t, port)
		left := libraryGoroutines()
		if open <= 1 && len(left) == 0 {
			t.Logf("after Run: %d handlings, %d connection to the proxy pooled, no goroutine of the library or client-go's cache left", handled.Load(), open)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after Run returned: %d connections to the proxy open (at most 1 pooled), goroutines left:\n%s", open, strings.Join(left, "\n\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// libraryGoroutines returns the stacks of the goroutines running code of
// the library or of client-go's caches and watches.
func libraryGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "TestNoLeakAfterFaults") || strings.Contains(g, "testing.(*M).Run") || strings.Contains(g, "hack/envtest.") {
			continue // the test, and the control plane's processes
		}
		if strings.Contains(g, "github.com/kooperkit/kooper/kooper/") || strings.Contains(g, "k8s.io/client-go/tools/cache") ||
			strings.Contains(g, "k8s.io/apimachinery/pkg/watch") || strings.Contains(g, "k8s.io/client-go/rest/watch") {
			left = append(left, g)
		}
	}
	return left
}

// established counts the established TCP connections to 127.0.0.1:port
// from this machine (/proc/net/tcp: local port in hex, state 01).
func established(t *testing.T, port string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no /proc/net/tcp")
	}
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	want := fmt.Sprintf(":%04X", p)
	n := 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[2], want) && f[3] == "01" {
			n++ // the client's end, connected to the proxy's port
		}
	}
	return n
}
