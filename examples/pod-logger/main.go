// Command pod-logger is the README's quickstart as a program: a Kooper
// controller that logs every pod's phase, with Prometheus metrics.
//
// With -kubeconfig it watches that cluster (read-only). Without, it runs a
// self-contained demo: an in-memory retriever with simulated pods starting,
// running and finishing, so the controller loop can be watched without a
// cluster.
//
//	go run ./examples/pod-logger                          # demo
//	go run ./examples/pod-logger -kubeconfig ~/.kube/config
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/kooper/metrics/prometheus"
)

// region: main

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pod-logger:", err)
		os.Exit(1)
	}
}

// endregion: main

// run parses args, wires the controller and runs it until ctx is done (or
// the demo's -duration passes).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// region: flags
	fs := flag.NewFlagSet("pod-logger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster to watch; empty runs the in-memory demo")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:8080", "address serving /metrics; empty disables it")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h printed the usage: not a failure
		}
		return err
	}
	level, err := log.ParseLevel(*logLevel)
	if err != nil {
		return err
	}
	logger := log.NewStd(stderr, log.StdOptions{Level: level})
	defer log.RouteKlog(logger)() // client-go's own messages in the same format
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	// endregion: flags

	// region: metrics
	registry := prom.NewRegistry()
	recorder, err := prometheus.New(registry)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		stopMetrics, err := serveMetrics(*metricsAddr, registry)
		if err != nil {
			return err
		}
		defer stopMetrics()
		logger.Info("serving metrics", "url", "http://"+*metricsAddr+"/metrics")
	}
	// endregion: metrics

	// region: pods
	var pods controller.Retriever
	if *kubeconfig != "" {
		if pods, err = clusterPods(*kubeconfig); err != nil {
			return err
		}
	} else {
		logger.Info("no -kubeconfig: running the in-memory demo")
		demo := controllertest.NewRetriever(&corev1.Pod{})
		go simulate(ctx, demo)
		pods = demo
	}
	// endregion: pods

	// region: controller
	ctrl, err := controller.New(controller.Config{
		Name:            "pod-logger",
		Handler:         controller.Typed(logPod(stdout)),
		Retriever:       pods,
		Logger:          logger,
		MetricsRecorder: recorder,
	})
	if err != nil {
		return err
	}
	return ctrl.Run(ctx)
	// endregion: controller
}

// region: handler

// logPod is the domain logic: print the pod's latest phase.
func logPod(w io.Writer) func(context.Context, *corev1.Pod) error {
	return func(_ context.Context, pod *corev1.Pod) error {
		_, err := fmt.Fprintf(w, "pod %s/%s is %s\n", pod.Namespace, pod.Name, pod.Status.Phase)
		return err
	}
}

// endregion: handler

// region: retriever

func clusterPods(kubeconfig string) (controller.Retriever, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("could not load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("could not create a client: %w", err)
	}
	pods := client.CoreV1().Pods("")
	return controller.NewRetriever(pods.List, pods.Watch), nil
}

// endregion: retriever

// simulate plays a small cluster's pod churn on the demo retriever: pods
// are created Pending, start Running, and some finish, every 300ms.
func simulate(ctx context.Context, pods *controllertest.Retriever) {
	phases := []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded}
	state := map[string]int{}
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		name := fmt.Sprintf("web-%d", rand.IntN(5))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}}
		i, exists := state[name]
		switch {
		case !exists:
			pod.Status.Phase = phases[0]
			_, _ = pods.Add(pod)
			state[name] = 0
		case i+1 < len(phases):
			pod.Status.Phase = phases[i+1]
			_, _ = pods.Update(pod)
			state[name] = i + 1
		default:
			_ = pods.Delete(pod)
			delete(state, name)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// region: serve-metrics

func serveMetrics(addr string, registry *prom.Registry) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("could not listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "metrics server:", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// endregion: serve-metrics
