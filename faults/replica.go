package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/log"
)

// Environment of a replica process (RunReplicaIfAsked).
const (
	EnvReplica    = "FAULTS_REPLICA"    // the replica process's id
	EnvKubeconfig = "FAULTS_KUBECONFIG" // through its proxy
	EnvNamespace  = "FAULTS_NAMESPACE"  // its ConfigMaps and Lease
	EnvRecord     = "FAULTS_RECORD"     // its record file
)

// Lease timings of the replicas: short, so that a run sees many
// takeovers.
const (
	LeaseDuration = 5 * time.Second
	RenewDeadline = 3 * time.Second
	RetryPeriod   = 500 * time.Millisecond
)

// RunReplicaIfAsked runs a replica and exits when the process was started
// as one (EnvReplica set), and returns otherwise: call it first in
// TestMain, which starts replicas as copies of the test binary.
func RunReplicaIfAsked() {
	id := os.Getenv(EnvReplica)
	if id == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := runReplica(ctx, id)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runReplica is one replica: a controller of the namespace's ConfigMaps
// under leader election, whose handler records each handling and takes
// 20-60ms, so that handlings of one key by two replicas would overlap.
func runReplica(ctx context.Context, id string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(EnvKubeconfig))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	rec, err := NewRecorder(os.Getenv(EnvRecord), id)
	if err != nil {
		return err
	}
	defer rec.Close()
	ns := os.Getenv(EnvNamespace)
	logger := log.NewStd(os.Stderr, log.StdOptions{Level: log.LevelInfo}).With("replica", id)
	cms := client.CoreV1().ConfigMaps(ns)
	ctrl, err := controller.New(controller.Config{
		Name: "faults",
		// A faster bound on silent watches than the default, so that the
		// tests see it work.
		Retriever: controller.WithWatchIdleTimeout(controller.NewRetriever(cms.List, cms.Watch), 20*time.Second),
		Handler: controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
			cm := obj.(*corev1.ConfigMap)
			key := cm.Name
			rec.Begin(key, cm.ResourceVersion)
			select {
			case <-time.After(time.Duration(20+rand.IntN(40)) * time.Millisecond):
				rec.End(key, cm.ResourceVersion, true)
				return nil
			case <-ctx.Done():
				rec.End(key, cm.ResourceVersion, false)
				return ctx.Err()
			}
		}),
		ConcurrentWorkers: 4,
		ShutdownTimeout:   500 * time.Millisecond,
		ResyncInterval:    time.Minute,
		Logger:            logger,
	})
	if err != nil {
		return err
	}
	runner, err := leaderelection.New(leaderelection.Config{
		Name: "faults", Namespace: ns, Client: client.CoordinationV1(), Identity: id,
		LeaseDuration: LeaseDuration, RenewDeadline: RenewDeadline, RetryPeriod: RetryPeriod,
		Logger: logger,
	}, ctrl)
	if err != nil {
		return err
	}
	err = runner.Run(ctx)
	if errors.Is(err, leaderelection.ErrLeaseLost) {
		return err // the supervisor starts it again, as a kubelet would
	}
	return err
}
