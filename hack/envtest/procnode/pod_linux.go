//go:build linux

package procnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// podRunner is the node's agent for one pod, from its binding to its
// deletion: the only goroutine that changes the pod's containers and
// writes its status.
type podRunner struct {
	n      *Node
	uid    types.UID
	dir    string
	box    *mailbox      // the newest pod object
	events chan func()   // reports of the containers' processes and probes
	done   chan struct{} // closed when run returns

	pod        *corev1.Pod
	sb         *sandbox
	containers []*container
	volumes    map[string]rendered
	refresh    time.Time // when tokens are to be requested again
	startTime  *metav1.Time
	setupErr   error
	setupAt    time.Time
	written    *corev1.PodStatus
}

// run handles the pod until it is deleted or ctx (the node) stops.
func (r *podRunner) run(ctx context.Context) {
	defer close(r.done)
	defer r.teardown()
	wake := time.NewTimer(0)
	defer wake.Stop()
	for {
		if r.pod != nil && r.pod.DeletionTimestamp != nil {
			r.terminate(ctx, gracePeriod(r.pod))
			r.syncStatus(ctx)
			r.deletePod(ctx)
			return
		}
		if r.pod != nil {
			r.step(ctx)
			r.syncStatus(ctx)
		}
		resetTimer(wake, r.nextWake())
		select {
		case <-ctx.Done():
			// The node stops: its containers stop as on a node shutdown.
			r.terminate(context.WithoutCancel(ctx), gracePeriod(r.pod))
			r.syncStatus(context.WithoutCancel(ctx))
			return
		case <-r.box.notify:
			p, gone := r.box.take()
			if gone {
				// Deleted without waiting for this node (a force delete).
				r.terminate(ctx, gracePeriod(r.pod))
				return
			}
			r.pod = p
		case f := <-r.events:
			f()
		case <-wake.C:
		}
	}
}

func resetTimer(t *time.Timer, at time.Time) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	if !at.IsZero() {
		t.Reset(max(time.Until(at), 0))
	}
}

// nextWake is when step has something to do: a container to restart,
// tokens to renew, a failed set-up to retry.
func (r *podRunner) nextWake() time.Time {
	var at time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	if r.setupErr != nil {
		earliest(r.setupAt.Add(5 * time.Second))
	}
	earliest(r.refresh)
	for _, c := range r.containers {
		if c.cmd == nil && !c.nextStart.IsZero() {
			earliest(c.nextStart)
		}
	}
	return at
}

// step makes the pod's sandbox and containers, starts what is due, and
// renews tokens.
func (r *podRunner) step(ctx context.Context) {
	if r.sb == nil {
		if r.setupErr != nil && time.Since(r.setupAt) < 5*time.Second {
			return
		}
		r.setupAt = time.Now()
		if r.setupErr = r.setup(ctx); r.setupErr != nil {
			r.n.logf("pod %s/%s: %v", r.pod.Namespace, r.pod.Name, r.setupErr)
			r.event(corev1.EventTypeWarning, "FailedCreatePodSandBox", r.setupErr.Error())
			return
		}
	}
	if !r.refresh.IsZero() && time.Now().After(r.refresh) {
		if err := r.renderVolumes(ctx); err != nil {
			r.n.logf("pod %s/%s: could not renew its volumes: %v", r.pod.Namespace, r.pod.Name, err)
		}
		for _, c := range r.containers {
			if err := c.writeVolumes(r.volumes, r.fsGroup()); err != nil {
				r.n.logf("pod %s/%s: could not renew its volumes: %v", r.pod.Namespace, r.pod.Name, err)
			}
		}
	}
	for _, c := range r.containers {
		if c.cmd == nil && !c.nextStart.IsZero() && !time.Now().Before(c.nextStart) {
			r.startContainer(ctx, c)
		}
	}
}

// setup creates the pod's network namespace, unpacks its images and
// renders its volumes. An error is the reason the pod does not start, in
// its status and a Warning Event; setup is retried.
func (r *podRunner) setup(ctx context.Context) error {
	if err := unsupportedSpec(r.pod); err != nil {
		return err
	}
	var containers []*container
	for i := range r.pod.Spec.Containers {
		spec := &r.pod.Spec.Containers[i]
		img, err := r.n.image(spec.Image)
		c := &container{spec: spec, image: img, rootfs: filepath.Join(r.dir, "containers", spec.Name, "rootfs"),
			logDir: filepath.Join(r.dir, "containers", spec.Name, "logs"), nextStart: time.Now()}
		if err != nil {
			c.waiting = &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: err.Error()}
			r.containers = []*container{c}
			return err
		}
		containers = append(containers, c)
	}
	r.containers = containers
	if err := r.renderVolumes(ctx); err != nil {
		return err
	}
	for _, c := range r.containers {
		if err := c.makeRootfs(r.volumes, r.fsGroup()); err != nil {
			return err
		}
		if err := r.writeEtc(c); err != nil {
			return err
		}
	}
	sb, err := r.n.net.newSandbox(ctx, r.n.service, r.n.apiServer, r.n.dial)
	if err != nil {
		return err
	}
	r.sb = sb
	now := metav1.Now()
	r.startTime = &now
	return nil
}

// unsupportedSpec names what of a pod this node would not run faithfully.
func unsupportedSpec(pod *corev1.Pod) error {
	s := pod.Spec
	var what []string
	if len(s.InitContainers) > 0 {
		what = append(what, "init containers")
	}
	if s.HostNetwork || s.HostPID || s.HostIPC {
		what = append(what, "host namespaces")
	}
	for _, c := range s.Containers {
		if c.Lifecycle != nil && (c.Lifecycle.PostStart != nil || c.Lifecycle.PreStop != nil) {
			what = append(what, "lifecycle hooks")
		}
	}
	if len(what) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnsupported, strings.Join(what, ", "))
}

func (r *podRunner) fsGroup() *int64 {
	if r.pod.Spec.SecurityContext != nil {
		return r.pod.Spec.SecurityContext.FSGroup
	}
	return nil
}

// renderVolumes renders every volume of the pod, and when they are due
// again.
func (r *podRunner) renderVolumes(ctx context.Context) error {
	vols := map[string]rendered{}
	var refresh time.Time
	for _, v := range r.pod.Spec.Volumes {
		out, err := r.n.volumes.render(ctx, r.pod, v)
		if err != nil {
			return err
		}
		vols[v.Name] = out
		if !out.refresh.IsZero() && (refresh.IsZero() || out.refresh.Before(refresh)) {
			refresh = out.refresh
		}
	}
	r.volumes, r.refresh = vols, refresh
	return nil
}

// writeEtc writes what the kubelet mounts in every container: /etc/hosts
// and /etc/hostname; and the device files a program may open. They go
// where the container sees them, through an os.Root: an image's links are
// resolved in its root (see inRoot), never followed to the node's files.
func (r *podRunner) writeEtc(c *container) error {
	root, err := os.OpenRoot(c.rootfs)
	if err != nil {
		return fmt.Errorf("could not open the container's root file system: %w", err)
	}
	defer root.Close()
	host := r.pod.Name
	if r.pod.Spec.Hostname != "" {
		host = r.pod.Spec.Hostname
	}
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if r.sb != nil {
		hosts += r.sb.ip.String() + "\t" + host + "\n"
	}
	if err := writeRootFile(root, "/etc/hosts", []byte(hosts)); err != nil {
		return err
	}
	if err := writeRootFile(root, "/etc/hostname", []byte(host+"\n")); err != nil {
		return err
	}
	return makeDevices(root)
}

// writeRootFile writes data in the container's file name, through its
// links resolved in root, creating its directory if need be.
func writeRootFile(root *os.Root, name string, data []byte) error {
	p, err := inRoot(root, name)
	if err == nil {
		err = root.MkdirAll(path.Dir(p), 0o755)
	}
	if err == nil {
		err = root.WriteFile(p, data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("could not write %s: %w", name, err)
	}
	return nil
}

// makeDevices makes the container's /dev, through its links resolved in
// root, and the character devices null, zero, full, random and urandom in
// it. The devices are best effort (a node not run as root cannot make them,
// a file system mounted nodev makes them useless); a name that exists,
// such as a link, is left as it is.
func makeDevices(root *os.Root) error {
	p, err := inRoot(root, "/dev")
	if err == nil {
		err = root.MkdirAll(p, 0o755)
	}
	var dev *os.File
	if err == nil {
		dev, err = root.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY, 0)
	}
	if err != nil {
		return fmt.Errorf("could not make /dev: %w", err)
	}
	defer dev.Close()
	for name, minor := range map[string]uint32{"null": 3, "zero": 5, "full": 7, "random": 8, "urandom": 9} {
		// os.Root has no Mknod: make it in the directory opened through
		// root; mknodat follows no link at its last element.
		if unix.Mknodat(int(dev.Fd()), name, unix.S_IFCHR|0o666, int(unix.Mkdev(1, minor))) == nil {
			_ = root.Chmod(path.Join(p, name), 0o666) // against the umask
		}
	}
	return nil
}

// startContainer starts c's process, with the pod's environment, and its
// probes.
func (r *podRunner) startContainer(ctx context.Context, c *container) {
	env, err := r.n.env.containerEnv(ctx, r.podWithIPs(), c.spec, c.image.config.Env)
	if err == nil {
		if err = r.writeEtc(c); err == nil {
			err = c.start(r.sb, r.pod, env)
		}
	}
	if err != nil {
		c.nextStart = time.Now().Add(5 * time.Second)
		c.waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()}
		if !errors.Is(err, ErrUnsupported) && strings.HasPrefix(err.Error(), "could not start") {
			c.waiting.Reason = "CreateContainerError"
		}
		r.event(corev1.EventTypeWarning, "Failed", fmt.Sprintf("Error: %v", err))
		r.n.logf("pod %s/%s: container %s: %v", r.pod.Namespace, r.pod.Name, c.spec.Name, err)
		return
	}
	c.nextStart = time.Time{}
	r.event(corev1.EventTypeNormal, "Started", "Started container "+c.spec.Name)
	r.n.logf("pod %s/%s: container %s started as pid %d: %s", r.pod.Namespace, r.pod.Name, c.spec.Name, c.cmd.Process.Pid, strings.Join(c.cmd.Args, " "))
	cmd, instance := c.cmd, c.instance
	probeCtx, stop := context.WithCancel(ctx)
	c.stop = stop
	go func() {
		err := cmd.Wait()
		stop()
		r.report(func() { r.exited(c, instance, err) })
	}()
	ip := r.sb.ip.String()
	version := r.n.version
	for kind, p := range map[probeKind]*corev1.Probe{startupProbe: c.spec.StartupProbe, livenessProbe: c.spec.LivenessProbe, readinessProbe: c.spec.ReadinessProbe} {
		if p == nil {
			continue
		}
		go func() {
			if kind != startupProbe && c.spec.StartupProbe != nil {
				// Liveness and readiness wait for the startup probe.
				if !r.waitStartup(probeCtx, c, instance) {
					return
				}
			}
			runProbe(probeCtx, kind, p, ip, c.spec, version,
				func(res probeResult) { r.report(func() { r.probed(c, instance, res) }) },
				func(msg string) {
					r.report(func() { r.event(corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", kind, msg)) })
				})
		}()
	}
}

// waitStartup polls, through the runner, until c's startup probe passed.
func (r *podRunner) waitStartup(ctx context.Context, c *container, instance int) bool {
	for {
		done := make(chan bool, 1)
		r.report(func() { done <- c.instance == instance && c.startupDone })
		select {
		case <-ctx.Done():
			return false
		case ok := <-done:
			if ok {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// report hands f to the runner's goroutine.
func (r *podRunner) report(f func()) {
	select {
	case r.events <- f:
	case <-r.done:
	}
}

// probed applies a probe's change of state.
func (r *podRunner) probed(c *container, instance int, res probeResult) {
	if c.instance != instance || c.cmd == nil {
		return
	}
	switch res.kind {
	case readinessProbe:
		c.ready = res.ok
	case startupProbe:
		c.startupDone = res.ok
		if res.ok {
			break
		}
		fallthrough
	case livenessProbe:
		if res.ok || c.killing != "" {
			return
		}
		c.killing = fmt.Sprintf("Container %s failed %s probe, will be restarted", c.spec.Name, strings.ToLower(string(res.kind)))
		r.event(corev1.EventTypeNormal, "Killing", c.killing)
		r.n.logf("pod %s/%s: %s: %s", r.pod.Namespace, r.pod.Name, c.killing, res.msg)
		c.ready = false
		c.signal(syscall.SIGTERM)
		cmd := c.cmd
		grace := gracePeriod(r.pod)
		if p := probeOf(c.spec, res.kind); p != nil && p.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
		}
		time.AfterFunc(grace, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	}
}

func probeOf(c *corev1.Container, kind probeKind) *corev1.Probe {
	switch kind {
	case startupProbe:
		return c.StartupProbe
	case livenessProbe:
		return c.LivenessProbe
	}
	return c.ReadinessProbe
}

// exited records the end of c's process and, per restartPolicy, when it
// starts again: at once the first time, then after 10s, 20s, ... up to
// 5 minutes (the kubelet's CrashLoopBackOff), reset after 10 minutes of
// running.
func (r *podRunner) exited(c *container, instance int, err error) {
	if c.instance != instance {
		return
	}
	code, reason := exitCode(err), "Completed"
	if err != nil {
		reason = "Error"
	}
	t := &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
		StartedAt: metav1.NewTime(c.started), FinishedAt: metav1.Now(), ContainerID: containerID(c)}
	if c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && code != 0 {
		t.Message = tail(r.n.logs(c), 80, 2048)
	}
	c.cmd, c.current, c.ready = nil, t, false
	if c.stop != nil {
		c.stop()
	}
	r.n.logf("pod %s/%s: container %s exited with code %d", r.pod.Namespace, r.pod.Name, c.spec.Name, code)
	if r.pod.DeletionTimestamp != nil {
		return
	}
	policy := r.pod.Spec.RestartPolicy
	if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && code == 0) {
		return
	}
	if time.Since(c.started) > 10*time.Minute {
		c.backoff = 0
	}
	c.nextStart = time.Now().Add(c.backoff)
	if c.backoff > 0 {
		c.waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", c.backoff, c.spec.Name, r.pod.Name, r.pod.Namespace, r.pod.UID)}
		r.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container "+c.spec.Name+" in pod "+r.pod.Name+"_"+r.pod.Namespace+"("+string(r.pod.UID)+")")
	}
	c.backoff = min(max(2*c.backoff, 10*time.Second), 5*time.Minute)
	c.last, c.restarts = t, c.restarts+1
}

func exitCode(err error) int32 {
	var ee interface{ Sys() any }
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			if ws.Signaled() {
				return 128 + int32(ws.Signal())
			}
			return int32(ws.ExitStatus())
		}
	}
	if err != nil {
		return 128
	}
	return 0
}

func containerID(c *container) string {
	return fmt.Sprintf("procnode://%s-%d", c.spec.Name, c.instance)
}

// gracePeriod is how long a pod's containers get between SIGTERM and
// SIGKILL.
func gracePeriod(pod *corev1.Pod) time.Duration {
	if pod == nil {
		return 0
	}
	if pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	return time.Duration(ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 30)) * time.Second
}

// terminate stops every container: SIGTERM, then SIGKILL after grace.
func (r *podRunner) terminate(ctx context.Context, grace time.Duration) {
	var running []*container
	for _, c := range r.containers {
		c.nextStart = time.Time{}
		if c.cmd != nil {
			running = append(running, c)
			c.signal(syscall.SIGTERM)
			if r.pod != nil {
				r.event(corev1.EventTypeNormal, "Killing", "Stopping container "+c.spec.Name)
			}
		}
	}
	deadline := time.After(grace)
	killed := false
	for slices.ContainsFunc(running, func(c *container) bool { return c.cmd != nil }) {
		select {
		case f := <-r.events:
			f()
		case <-deadline:
			if !killed {
				killed = true
				for _, c := range running {
					c.signal(syscall.SIGKILL)
				}
			}
		case <-ctx.Done():
			for _, c := range running {
				c.signal(syscall.SIGKILL)
			}
		}
	}
}

// deletePod removes the pod from the API server once its containers are
// gone, as the kubelet does with a zero grace period.
func (r *podRunner) deletePod(ctx context.Context) {
	err := r.n.client.CoreV1().Pods(r.pod.Namespace).Delete(ctx, r.pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &r.pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.n.logf("pod %s/%s: could not delete it: %v", r.pod.Namespace, r.pod.Name, err)
	}
}

func (r *podRunner) teardown() {
	if r.sb != nil {
		r.sb.close()
	}
	for _, c := range r.containers {
		_ = os.RemoveAll(c.rootfs)
	}
}

// mailbox holds the newest pod object for a runner: the informer never
// waits for a runner busy stopping containers.
type mailbox struct {
	mu     sync.Mutex
	pod    *corev1.Pod
	gone   bool
	notify chan struct{}
}

func newMailbox() *mailbox { return &mailbox{notify: make(chan struct{}, 1)} }

func (b *mailbox) put(pod *corev1.Pod, gone bool) {
	b.mu.Lock()
	if pod != nil {
		b.pod = pod
	}
	b.gone = b.gone || gone
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

func (b *mailbox) take() (*corev1.Pod, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pod, b.gone
}

// tail is the end of s: at most lines lines and max bytes.
func tail(s string, lines, max int) string {
	s = strings.TrimRight(s, "\n")
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	s = strings.Join(all, "\n")
	if len(s) > max {
		s = s[len(s)-max:]
	}
	return s
}
