package envtest

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KwokNodeAnnotation marks the nodes kwok simulates.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// startScheduler starts kube-scheduler and waits until it is healthy.
func (c *Cluster) startScheduler(ctx context.Context, began time.Time) error {
	sched, err := c.component("system:kube-scheduler", nil)
	if err != nil {
		return err
	}
	serving, err := c.pki.issue("kube-scheduler-serving", nil, []string{"127.0.0.1", "localhost"})
	if err != nil {
		return err
	}
	err = c.startOnFreePorts(ctx, began, 1, func(ports []int) (*process, func(context.Context) error) {
		p := c.process(BinScheduler,
			"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
			"--bind-address=127.0.0.1", "--secure-port="+itoa(ports[0]),
			"--tls-cert-file="+serving.certFile, "--tls-private-key-file="+serving.keyFile,
			"--cert-dir="+filepath.Join(c.dir, "kube-scheduler"), "--leader-elect=false")
		return p, func(ctx context.Context) error {
			return p.waitHealthy(ctx, "https://127.0.0.1:"+itoa(ports[0])+"/healthz", c.trusting())
		}
	})
	if err != nil {
		return err
	}
	c.progress("kube-scheduler ready", began)
	return nil
}

// startNodes starts kwok, registers Options.Nodes fake nodes and waits
// until they are Ready.
func (c *Cluster) startNodes(ctx context.Context, began time.Time) error {
	client, err := kubernetes.NewForConfig(c.restCfg)
	if err != nil {
		return fmt.Errorf("could not create a client: %w", err)
	}
	err = c.startOnFreePorts(ctx, began, 1, func(ports []int) (*process, func(context.Context) error) {
		kwok := c.process(BinKwok,
			"--kubeconfig="+c.KubeconfigPath(),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
			"--server-address=127.0.0.1:"+itoa(ports[0]),
			"--cidr=10.244.0.0/16", "--node-ip=127.0.0.1",
			// Renew each node's Lease every 10s (a quarter of it): without it the
			// heartbeat came every ~55s, past the controller manager's grace
			// period, which marked the node NotReady and its pods not Ready for
			// good, every minute (a test passed once, then failed on -count=3).
			"--node-lease-duration-seconds=40")
		// kwok's health check is plain HTTP, which another process on the
		// port can answer: the nodes becoming Ready is the check that it is
		// kwok, and kwok exiting (its port taken) ends the wait.
		return kwok, func(ctx context.Context) error {
			if err := kwok.waitHealthy(ctx, "http://127.0.0.1:"+itoa(ports[0])+"/healthz", nil); err != nil {
				return err
			}
			for i := range c.opts.Nodes {
				if _, err := client.CoreV1().Nodes().Create(ctx, fakeNode(fmt.Sprintf("kwok-node-%d", i)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("could not create a fake node: %w", err)
				}
			}
			for {
				nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
				if err == nil && countReady(nodes.Items) >= c.opts.Nodes {
					return nil
				}
				select {
				case <-ctx.Done():
					return kwok.failure(fmt.Sprintf("did not make %d nodes Ready in time", c.opts.Nodes))
				case <-kwok.done:
					return kwok.failure(fmt.Sprintf("before it made %d nodes Ready", c.opts.Nodes))
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	})
	if err != nil {
		return err
	}
	c.progress(fmt.Sprintf("%d kwok nodes ready", c.opts.Nodes), began)
	return nil
}

func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

func countReady(nodes []corev1.Node) int {
	n := 0
	for _, node := range nodes {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}
