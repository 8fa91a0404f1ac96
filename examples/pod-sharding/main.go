// Command pod-sharding is one replica of a sharded controller: run it two
// or three times against one cluster and the replicas share the pods
// between them, each logging only the pods of its slots. Stop one and its
// slots move to the others; start another and it takes its share.
//
//	go run ./examples/pod-sharding -kubeconfig .devcluster/kubeconfig -identity one
//	go run ./examples/pod-sharding -kubeconfig .devcluster/kubeconfig -identity two
//
// docs/tutorial-sharding.md walks through it; docs/sharding.md is the
// protocol. The replicas agree through Leases in -namespace, so their
// kubeconfig needs get, list, watch, create, update and delete on leases
// there, and list and watch on pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/health"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/kooper/metrics/prometheus"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pod-sharding:", err)
		os.Exit(1)
	}
}

// run parses args, wires one replica and runs it until ctx is done (or
// -duration passes).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pod-sharding", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster (required)")
	namespace := fs.String("namespace", "default", "where the replicas' Leases are")
	identity := fs.String("identity", "", "this replica's name in logs and its Lease (default: host name and a random suffix)")
	slots := fs.Int("slots", sharding.DefaultSlots, "slots of the hash space: a power of two up to 256, the same in every replica")
	metricsAddr := fs.String("metrics-addr", "", "address serving /metrics (the controller's and kooper_sharding_slots), /healthz and /readyz; empty disables it")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *kubeconfig == "" {
		return errors.New("-kubeconfig is required: the replicas agree through Leases on a cluster")
	}
	level, err := log.ParseLevel(*logLevel)
	if err != nil {
		return err
	}
	logger := log.NewStd(stderr, log.StdOptions{Level: level})
	defer log.RouteKlog(logger)()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	registry := prom.NewRegistry()
	recorder, err := prometheus.New(registry)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("could not load kubeconfig %s: %w", *kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("could not create a client: %w", err)
	}

	// region: runner
	// The Runner holds this replica's Lease in the group "pod-sharding" and
	// agrees with the other replicas on who owns which slot.
	runner, err := sharding.New(sharding.Config{
		Name:      "pod-sharding",
		Namespace: *namespace,
		Client:    client.CoordinationV1(),
		Identity:  *identity,
		Slots:     *slots,
		Logger:    logger,
		// kooper_sharding_slots: the slots this replica owns, and the mode.
		Recorder: recorder,
	})
	if err != nil {
		return err
	}
	// endregion: runner

	// region: controller
	// A controller as any other, but for two wrappers of the Runner's: its
	// slot gate around the handler, and its Retriever around every pod's.
	pods := client.CoreV1().Pods("")
	ctrl, err := controller.New(controller.Config{
		Name:      "pod-sharding",
		Retriever: runner.Retriever(controller.NewRetriever(pods.List, pods.Watch)),
		Handler:   runner.Handler(controller.Typed(logPod(stdout, *slots))),
		Logger:    logger,
		// The controller's metrics, as any controller's.
		MetricsRecorder: recorder,
	})
	if err != nil {
		return err
	}
	// endregion: controller
	if *metricsAddr != "" {
		// region: ready
		srv, err := health.Start(health.Config{Addr: *metricsAddr, Gatherer: registry, Ready: runner.Ready, Logger: logger})
		// endregion: ready
		if err != nil {
			return err
		}
		defer srv.Stop()
	}
	go reportSlots(ctx, runner, logger)
	// region: run
	return runner.Run(ctx, ctrl)
	// endregion: run
}

// region: handler

// logPod prints the pod's phase and its slot: each pod is printed by one
// replica only, the one whose slots hold it.
func logPod(w io.Writer, slots int) func(context.Context, *corev1.Pod) error {
	return func(_ context.Context, pod *corev1.Pod) error {
		_, err := fmt.Fprintf(w, "pod %s/%s is %s (slot %d)\n", pod.Namespace, pod.Name, pod.Status.Phase, sharding.SlotOf(pod.UID, slots))
		return err
	}
}

// endregion: handler

// reportSlots logs this replica's slots whenever they change.
func reportSlots(ctx context.Context, r *sharding.Runner, logger log.Logger) {
	var last []int
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if now := r.Slots(); !slices.Equal(now, last) {
			logger.Info("slots owned", "count", len(now), "slots", fmt.Sprint(now), "mode", string(r.Mode()))
			last = now
		}
	}
}
