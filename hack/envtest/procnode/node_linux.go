//go:build linux

package procnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Node is a registered node whose pods run as processes on this machine.
// Start one with Start; Stop it when done.
type Node struct {
	opts    Options
	client  kubernetes.Interface
	dir     string
	ownDir  bool
	net     *network
	ip      netip.Addr
	service netip.AddrPort // the kubernetes Service, as pods reach the API server
	// apiServer is the API server's host:port, where the forwarders of the
	// pods' namespaces connect.
	apiServer string
	dial      func(context.Context, string) (net.Conn, error)
	version   string // major.minor, for the probes' User-Agent
	env       envSources
	volumes   volumes

	imagesMu sync.Mutex
	images   map[string]*loadedImage

	mu            sync.Mutex
	runners       map[types.UID]*podRunner
	containerLogs []ContainerLog

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	factory informers.SharedInformerFactory
	stopMu  sync.Once
	logMu   sync.Mutex
}

// Start registers the node, Ready, with a Lease it renews, and runs the
// pods bound to it until Stop. It fails with ErrUnsupported where the
// machine cannot run pods this way.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if opts.Config == nil {
		return nil, errors.New("procnode: Options.Config is required")
	}
	if opts.Name == "" {
		opts.Name = "procnode"
	}
	cfg := rest.CopyConfig(opts.Config)
	cfg.QPS, cfg.Burst = max(cfg.QPS, 50), max(cfg.Burst, 100)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("procnode: could not create a client: %w", err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("procnode: the API server address %q is not a URL", cfg.Host)
	}
	apiServer := u.Host
	if u.Port() == "" {
		apiServer = net.JoinHostPort(u.Hostname(), "443")
	}
	n := &Node{opts: opts, client: client, apiServer: apiServer, dir: opts.Dir,
		images: map[string]*loadedImage{}, runners: map[types.UID]*podRunner{}}
	n.dial = func(ctx context.Context, addr string) (net.Conn, error) {
		return (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", addr)
	}
	if n.dir == "" {
		if n.dir, err = os.MkdirTemp("", "kooper-procnode-"); err != nil {
			return nil, fmt.Errorf("procnode: %w", err)
		}
		n.ownDir = true
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("procnode: could not read the server version: %w", err)
	}
	n.version = strings.TrimPrefix(v.Major, "v") + "." + strings.TrimSuffix(v.Minor, "+")
	svc, err := client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("procnode: could not read the kubernetes Service (the pods' address of the API server): %w", err)
	}
	addr, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || len(svc.Spec.Ports) == 0 {
		return nil, fmt.Errorf("procnode: the kubernetes Service has no cluster IP and port: %+v", svc.Spec)
	}
	n.service = netip.AddrPortFrom(addr, uint16(svc.Spec.Ports[0].Port))
	if n.net, err = newNetwork(ctx); err != nil {
		return nil, fmt.Errorf("procnode: %w", err)
	}
	n.ip = n.net.gw
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memTotal(), resource.BinarySI),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n.env = envSources{client: client, allocatable: capacity}
	n.volumes = volumes{client: client, env: n.env}
	if err := n.register(ctx, v.GitVersion, capacity); err != nil {
		_ = n.net.close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	n.wg.Go(func() { n.heartbeat(runCtx) })
	n.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", opts.Name).String()
	}))
	pods := n.factory.Core().V1().Pods().Informer()
	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.dispatch(runCtx, obj, false) },
		UpdateFunc: func(_, obj any) { n.dispatch(runCtx, obj, false) },
		DeleteFunc: func(obj any) { n.dispatch(runCtx, obj, true) },
	})
	if err != nil {
		_ = n.Stop(ctx)
		return nil, fmt.Errorf("procnode: %w", err)
	}
	n.factory.Start(runCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		_ = n.Stop(ctx)
		return nil, fmt.Errorf("procnode: the pod watch did not sync: %w", ctx.Err())
	}
	n.logf("node %s ready: pods on %s, the API server at %s in each pod", opts.Name, n.net.prefix, n.service)
	return n, nil
}

// Name is the node's name, which pods are bound to.
func (n *Node) Name() string { return n.opts.Name }

// IP is the node's InternalIP: pods' addresses are in its /24, and
// probes, Services and the API server reach them from this machine.
func (n *Node) IP() netip.Addr { return n.ip }

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 8 << 30
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 8 << 30
}

// register creates (or takes over) the Node object, Ready.
func (n *Node) register(ctx context.Context, kubeletVersion string, capacity corev1.ResourceList) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.opts.Name, Labels: map[string]string{
		corev1.LabelHostname: n.opts.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH,
	}}}
	if _, err := n.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("procnode: could not register node %s: %w", n.opts.Name, err)
	}
	now := metav1.Now()
	status := corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Phase: corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "procnode is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip.String()}, {Type: corev1.NodeHostName, Address: n.opts.Name}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubeletVersion, OperatingSystem: "linux", Architecture: runtime.GOARCH,
			ContainerRuntimeVersion: "procnode://" + kubeletVersion, OSImage: "procnode"},
	}
	// The controller manager annotates and taints a new node at once: read
	// it again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := n.client.CoreV1().Nodes().Get(ctx, n.opts.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Status = status
		_, err = n.client.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("procnode: could not report node %s Ready: %w", n.opts.Name, err)
	}
	return nil
}

// heartbeat renews the node's Lease every 10 seconds and its Ready
// condition every minute, as the kubelet does, so that the node lifecycle
// controller neither taints the node nor evicts its pods.
func (n *Node) heartbeat(ctx context.Context) {
	leases := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	lastStatus := time.Now()
	for {
		now := metav1.NewMicroTime(time.Now())
		lease, err := leases.Get(ctx, n.opts.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: n.opts.Name},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(n.opts.Name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
			}, metav1.CreateOptions{})
		case err == nil:
			lease.Spec.RenewTime = &now
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			n.logf("node %s: could not renew its Lease: %v", n.opts.Name, err)
		}
		if time.Since(lastStatus) > time.Minute {
			lastStatus = time.Now()
			if node, err := n.client.CoreV1().Nodes().Get(ctx, n.opts.Name, metav1.GetOptions{}); err == nil {
				for i := range node.Status.Conditions {
					node.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
				}
				_, _ = n.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
}

// dispatch hands a pod event to the pod's runner, starting one for a new
// pod.
func (n *Node) dispatch(ctx context.Context, obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.runners[pod.UID]
	if !ok {
		if deleted || ctx.Err() != nil || isFinished(pod) {
			return
		}
		r = &podRunner{n: n, uid: pod.UID, box: newMailbox(), events: make(chan func()), done: make(chan struct{}),
			dir: filepath.Join(n.dir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))}
		n.runners[pod.UID] = r
		for _, c := range pod.Spec.Containers {
			n.containerLogs = append(n.containerLogs, ContainerLog{Namespace: pod.Namespace, Pod: pod.Name, UID: pod.UID, Container: c.Name,
				Dir: filepath.Join(r.dir, "containers", c.Name, "logs")})
		}
		n.wg.Go(func() {
			r.run(ctx)
			n.mu.Lock()
			delete(n.runners, pod.UID)
			n.mu.Unlock()
		})
	}
	r.box.put(pod.DeepCopy(), deleted)
}

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// image unpacks the image a container names, once per node.
func (n *Node) image(ref string) (*loadedImage, error) {
	n.imagesMu.Lock()
	defer n.imagesMu.Unlock()
	if img, ok := n.images[ref]; ok {
		return img, nil
	}
	spec, ok := n.opts.Images[ref]
	if !ok {
		known := make([]string, 0, len(n.opts.Images))
		for k := range n.opts.Images {
			known = append(known, k)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("image %q is not on node %s, which pulls nothing: it has %s (procnode.Options.Images)", ref, n.opts.Name, strings.Join(known, ", "))
	}
	img, err := spec.load(filepath.Join(n.dir, "images", strconv.Itoa(len(n.images))))
	if err != nil {
		return nil, fmt.Errorf("could not unpack image %s: %w", ref, err)
	}
	n.images[ref] = img
	return img, nil
}

// ContainerLogs lists the log of every container this node ran, in the
// order the pods came: a directory per container, with a file per process
// (1.log, 2.log after a restart, ...).
func (n *Node) ContainerLogs() []ContainerLog {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.containerLogs)
}

// logs is everything c's processes wrote.
func (n *Node) logs(c *container) string {
	var b strings.Builder
	for i := 1; i <= c.instance; i++ {
		data, _ := os.ReadFile(filepath.Join(c.logDir, fmt.Sprintf("%d.log", i)))
		b.Write(data)
	}
	return b.String()
}

// event records an Event about pod, from this node's kubelet.
func (n *Node) event(pod *corev1.Pod, eventType, reason, msg string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, time.Now().UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: reason, Message: msg, Type: eventType, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: "kubelet", Host: n.opts.Name},
		ReportingController: "kubelet", ReportingInstance: n.opts.Name,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = n.client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{})
}

func (n *Node) logf(format string, args ...any) {
	if n.opts.Log == nil {
		return
	}
	n.logMu.Lock()
	defer n.logMu.Unlock()
	fmt.Fprintf(n.opts.Log, "%s procnode: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Stop stops every pod as a node shutdown does (SIGTERM, then SIGKILL
// after its grace period), deletes the node's Lease and Node object,
// removes its network and, if Start made it, its directory. It returns
// once every process and goroutine of the node has ended.
func (n *Node) Stop(ctx context.Context) error {
	var err error
	n.stopMu.Do(func() {
		if n.cancel != nil {
			n.cancel()
		}
		if n.factory != nil {
			n.factory.Shutdown()
		}
		n.wg.Wait()
		ctx := context.WithoutCancel(ctx)
		_ = n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, n.opts.Name, metav1.DeleteOptions{})
		if derr := n.client.CoreV1().Nodes().Delete(ctx, n.opts.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			err = fmt.Errorf("procnode: could not delete node %s: %w", n.opts.Name, derr)
		}
		if nerr := n.net.close(); nerr != nil && err == nil {
			err = fmt.Errorf("procnode: %w", nerr)
		}
		if n.ownDir {
			_ = os.RemoveAll(n.dir)
		}
	})
	return err
}
