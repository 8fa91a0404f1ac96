package faults

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/hack/envtest"
)

// APIServerArgs are the kube-apiserver flags a fault run needs: request
// limits low enough that a burst of requests gets 429s (Priority and
// Fairness off, so that max-requests-inflight applies).
var APIServerArgs = []string{"--enable-priority-and-fairness=false", "--max-requests-inflight=12", "--max-mutating-requests-inflight=6"}

// Harness runs replica processes of a controller under leader election,
// each reaching the API server through a Proxy of its own, while writers
// change the objects they handle, and injects faults.
type Harness struct {
	Cluster   *envtest.Cluster
	Namespace string
	Dir       string // records, kubeconfigs and replica logs
	Objects   int    // ConfigMaps written to
	Logf      func(format string, args ...any)

	// Command, if set, is what each replica process runs instead of the
	// harness's own controller of ConfigMaps (a copy of the test binary):
	// an operator's binary, say. kubeconfig reaches the API server
	// through the replica's proxy, as ServiceAccount; the process runs in
	// a UTS namespace of its own whose host name is id, so that an
	// identity the program derives from its host name ("<host>_<uuid>")
	// names the replica.
	Command func(id, kubeconfig string) *exec.Cmd
	// ServiceAccount is the replicas' account, "namespace/name", which
	// must exist with the permissions the Command needs. Default: one the
	// harness creates in Namespace, allowed to read ConfigMaps and hold
	// Leases there.
	ServiceAccount string
	// Lease is the replicas' Lease, "namespace/name". Default
	// Namespace/faults.
	Lease string
	// LeaseDuration is the replicas' Lease duration, which a blackhole and
	// a SIGSTOP of the leader outlast. Default LeaseDuration, the harness's
	// own controller's.
	LeaseDuration time.Duration

	client   kubernetes.Interface
	replicas []*Replica

	mu     sync.Mutex
	deaths map[string]time.Time // by replica process id
	pauses []Pause

	stopWriters context.CancelFunc
	writers     sync.WaitGroup
	supervise   sync.WaitGroup
	stopping    chan struct{}
}

// Replica is one replica: a process (restarted when it exits, as by a
// kubelet) and its proxy.
type Replica struct {
	Name  string
	Proxy *Proxy

	mu       sync.Mutex
	cmd      *exec.Cmd
	instance int
	id       string
	exited   chan struct{}
}

// Start creates the namespace and its ConfigMaps, and starts n replicas.
func (h *Harness) Start(ctx context.Context, n int) error {
	h.client = kubernetes.NewForConfigOrDie(h.Cluster.Config())
	h.deaths = map[string]time.Time{}
	h.stopping = make(chan struct{})
	if h.Logf == nil {
		h.Logf = func(string, ...any) {}
	}
	if _, err := h.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.Namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := range h.Objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"n": "0"}}
		if _, err := h.client.CoreV1().ConfigMaps(h.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// The replicas and the storm are ServiceAccounts: the API server's
	// request limits spare system:masters.
	for _, sa := range []string{"replica", "storm"} {
		if err := h.grant(ctx, sa); err != nil {
			return err
		}
	}
	if h.ServiceAccount == "" {
		h.ServiceAccount = h.Namespace + "/replica"
	}
	if h.Lease == "" {
		h.Lease = h.Namespace + "/faults"
	}
	host, err := url.Parse(h.Cluster.Config().Host)
	if err != nil {
		return err
	}
	for i := range n {
		name := fmt.Sprintf("r%d", i+1)
		p, err := NewProxy(name, host.Host)
		if err != nil {
			return err
		}
		r := &Replica{Name: name, Proxy: p}
		if err := h.writeKubeconfig(r); err != nil {
			return err
		}
		h.replicas = append(h.replicas, r)
		if err := h.startReplica(r); err != nil {
			return err
		}
		h.supervise.Go(func() { h.superviseReplica(r) })
	}
	return nil
}

func (h *Harness) leaseDuration() time.Duration {
	if h.LeaseDuration > 0 {
		return h.LeaseDuration
	}
	return LeaseDuration
}

// grant creates ServiceAccount sa in the namespace, allowed what a replica
// does there: read ConfigMaps, hold the Lease.
func (h *Harness) grant(ctx context.Context, sa string) error {
	if _, err := h.client.CoreV1().ServiceAccounts(h.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
	}}
	if _, err := h.client.RbacV1().Roles(h.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: h.Namespace}}}
	_, err := h.client.RbacV1().RoleBindings(h.Namespace).Create(ctx, binding, metav1.CreateOptions{})
	return err
}

// token is a token of ServiceAccount sa ("name" in Namespace, or
// "namespace/name"), valid for a day.
func (h *Harness) token(ctx context.Context, sa string) (string, error) {
	ns, name, ok := strings.Cut(sa, "/")
	if !ok {
		ns, name = h.Namespace, sa
	}
	tok, err := h.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](86400)}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("could not get a token for %s: %w", sa, err)
	}
	return tok.Status.Token, nil
}

// writeKubeconfig writes a kubeconfig of the replica ServiceAccount with
// the server at r's proxy.
func (h *Harness) writeKubeconfig(r *Replica) error {
	token, err := h.token(context.Background(), h.ServiceAccount)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.LoadFromFile(h.Cluster.KubeconfigPath())
	if err != nil {
		return err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + r.Proxy.Addr()
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.ClientCertificate, a.ClientKey = nil, nil, "", ""
		a.Token = token
	}
	return clientcmd.WriteToFile(*cfg, filepath.Join(h.Dir, r.Name+".kubeconfig"))
}

func (h *Harness) startReplica(r *Replica) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.instance++
	r.id = fmt.Sprintf("%s-%d", r.Name, r.instance)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(h.Dir, r.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	kubeconfig := filepath.Join(h.Dir, r.Name+".kubeconfig")
	var cmd *exec.Cmd
	if h.Command != nil {
		cmd = h.Command(r.id, kubeconfig)
	} else {
		cmd = exec.Command(self)
		cmd.Env = append(os.Environ(), EnvReplica+"="+r.id, EnvKubeconfig+"="+kubeconfig,
			EnvNamespace+"="+h.Namespace, EnvRecord+"="+filepath.Join(h.Dir, r.id+".rec"))
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startNamed(cmd, r.id); err != nil {
		return fmt.Errorf("could not start replica %s: %w", r.id, err)
	}
	r.cmd, r.exited = cmd, make(chan struct{})
	return nil
}

// superviseReplica restarts r a second after it exits, until Stop.
func (h *Harness) superviseReplica(r *Replica) {
	for {
		r.mu.Lock()
		cmd, exited, id := r.cmd, r.exited, r.id
		r.mu.Unlock()
		err := cmd.Wait()
		h.mu.Lock()
		h.deaths[id] = time.Now()
		h.mu.Unlock()
		close(exited)
		select {
		case <-h.stopping:
			return
		case <-time.After(time.Second):
		}
		h.Logf("replica %s exited (%v): starting it again", id, err)
		if err := h.startReplica(r); err != nil {
			h.Logf("%v", err)
			return
		}
	}
}

// errNoLeader is the error of Leader when no replica leads.
var errNoLeader = errors.New("no leader")

// Leader returns the replica holding the Lease, waiting up to 30s for
// one to hold it.
func (h *Harness) Leader(ctx context.Context) (*Replica, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		holder := ""
		ns, name, _ := strings.Cut(h.Lease, "/")
		l, err := h.client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			holder = ptr.Deref(l.Spec.HolderIdentity, "")
		}
		for _, r := range h.replicas {
			if id := r.ID(); holder == id || strings.HasPrefix(holder, id+"_") {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no replica holds the Lease after 30s (holder %q): %w", holder, errors.Join(errNoLeader, err))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Replicas returns the replicas.
func (h *Harness) Replicas() []*Replica { return h.replicas }

// Signal sends sig to r's current process.
func (r *Replica) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd.Process.Signal(sig)
}

// ID is r's current process id (name-instance).
func (r *Replica) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

// Paused records that r's process was stopped from from to to.
func (h *Harness) Paused(r *Replica, from, to time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pauses = append(h.pauses, Pause{Replica: r.ID(), From: from, To: to})
}

// StartWriters changes a random ConfigMap every interval, directly on the
// API server (not through a proxy), until StopWriters; errors (while the
// API server or etcd is down) are ignored.
func (h *Harness) StartWriters(interval time.Duration, rng *rand.Rand) {
	ctx, cancel := context.WithCancel(context.Background())
	h.stopWriters = cancel
	var mu sync.Mutex
	h.writers.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			name := fmt.Sprintf("cm-%03d", rng.IntN(h.Objects))
			mu.Unlock()
			cms := h.client.CoreV1().ConfigMaps(h.Namespace)
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			cm, err := cms.Get(wctx, name, metav1.GetOptions{})
			if err == nil {
				n, _ := strconv.Atoi(cm.Data["n"])
				cm.Data["n"] = strconv.Itoa(n + 1)
				_, _ = cms.Update(wctx, cm, metav1.UpdateOptions{})
			}
			wcancel()
		}
	})
}

// StopWriters stops the writers and waits for them.
func (h *Harness) StopWriters() {
	if h.stopWriters != nil {
		h.stopWriters()
		h.writers.Wait()
	}
}

// Check returns an error naming the first overlapping handlings, and the
// number of handlings frozen by a pause.
func (h *Harness) Check() (handlings, frozen int, err error) {
	hs, err := ReadRecords(h.Dir)
	if err != nil {
		return 0, 0, err
	}
	h.mu.Lock()
	deaths := make(map[string]time.Time, len(h.deaths))
	for k, v := range h.deaths {
		deaths[k] = v
	}
	pauses := append([]Pause(nil), h.pauses...)
	h.mu.Unlock()
	overlaps, fr := Overlaps(hs, deaths, pauses, time.Second)
	if len(overlaps) > 0 {
		return len(hs), len(fr), fmt.Errorf("%d handlings of one key at once:%s", len(overlaps), Describe(overlaps, 5))
	}
	if woke := Woke(hs, pauses, h.leaseDuration()); len(woke) > 0 {
		return len(hs), len(fr), fmt.Errorf("%d handlings began by a replica woken up past its Lease, e.g. %s %s at %s", len(woke),
			woke[0].Replica, woke[0].Key, woke[0].Begin.Format("15:04:05.000"))
	}
	return len(hs), len(fr), nil
}

// Converged waits until every ConfigMap's final version was handled, or
// fails after timeout naming those that were not.
func (h *Harness) Converged(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := h.client.CoreV1().ConfigMaps(h.Namespace).List(ctx, metav1.ListOptions{})
		var missing []string
		if err == nil {
			finals := map[string]string{}
			for _, cm := range list.Items {
				if cm.Name != "kube-root-ca.crt" {
					finals[cm.Name] = cm.ResourceVersion
				}
			}
			hs, rerr := ReadRecords(h.Dir)
			if rerr != nil {
				return rerr
			}
			if missing = Unhandled(hs, finals); len(missing) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("%d objects' final versions not handled %s after the faults stopped: %v", len(missing), timeout, missing[:min(len(missing), 10)])
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Stop stops the replicas (SIGTERM: each releases the Lease and drains)
// and the proxies, and reports replicas that did not exit cleanly.
func (h *Harness) Stop() error {
	h.StopWriters()
	close(h.stopping)
	var errs []error
	for _, r := range h.replicas {
		_ = r.Signal(syscall.SIGCONT)
		_ = r.Signal(syscall.SIGTERM)
		r.mu.Lock()
		exited, id, cmd := r.exited, r.id, r.cmd
		r.mu.Unlock()
		select {
		case <-exited:
			if cmd.ProcessState != nil && !cmd.ProcessState.Success() && !h.lostLease(r) {
				errs = append(errs, fmt.Errorf("replica %s: %s on SIGTERM", id, cmd.ProcessState))
			}
		case <-time.After(10 * time.Second):
			_ = r.Signal(syscall.SIGKILL)
			<-exited
			errs = append(errs, fmt.Errorf("replica %s did not exit 10s after SIGTERM", id))
		}
	}
	h.supervise.Wait()
	for _, r := range h.replicas {
		r.Proxy.Close()
	}
	return errors.Join(errs...)
}

// StopWhenDone stops the replicas once tb's test ends (Stop), and, if it
// failed, logs the last lines of each replica's log.
func (h *Harness) StopWhenDone(tb testing.TB, lines int) {
	tb.Cleanup(func() {
		if err := h.Stop(); err != nil {
			tb.Errorf("stopping the replicas: %v", err)
		}
		if !tb.Failed() {
			return
		}
		for _, r := range h.replicas {
			if b, err := os.ReadFile(filepath.Join(h.Dir, r.Name+".log")); err == nil {
				all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
				tb.Logf("replica %s's log ends:\n%s", r.Name, strings.Join(all[max(0, len(all)-lines):], "\n"))
			}
		}
	})
}

// lostLease reports whether r's process ended saying it lost the Lease
// (a leader whose last renewal failed as it was told to stop).
func (h *Harness) lostLease(r *Replica) bool {
	b, err := os.ReadFile(filepath.Join(h.Dir, r.Name+".log"))
	if err != nil {
		return false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Contains(lines[len(lines)-1], "leader election lease lost")
}

// CompactEtcd compacts etcd's history up to its current revision, through
// its HTTP gateway: watches that resume from an older version get "too
// old resource version" once the API server's watch cache no longer has
// it (after an API server restart).
func CompactEtcd(ctx context.Context, etcdURL string) (int64, error) {
	post := func(path string, body any, out any) error {
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, etcdURL+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, data)
		}
		if out != nil {
			return json.Unmarshal(data, out)
		}
		return nil
	}
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := post("/v3/kv/range", map[string]string{"key": base64.StdEncoding.EncodeToString([]byte("/"))}, &status); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(status.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd revision %q: %w", status.Header.Revision, err)
	}
	if err := post("/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// Storm sends concurrent LISTs directly to the API server for d, so that
// requests get 429 Too Many Requests (APIServerArgs); it returns how many
// 429s the API server answered meanwhile, to anyone (its
// apiserver_request_total{code="429"}).
func (h *Harness) Storm(ctx context.Context, d time.Duration, workers int) (int, error) {
	before, err := h.throttled(ctx)
	if err != nil {
		return 0, err
	}
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	token, err := h.token(ctx, "storm")
	if err != nil {
		return 0, err
	}
	cfg := h.Cluster.Config()
	cfg.CertData, cfg.KeyData, cfg.BearerToken = nil, nil, token
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit
	client := kubernetes.NewForConfigOrDie(cfg)
	for range workers {
		wg.Go(func() {
			for sctx.Err() == nil {
				_, _ = client.CoreV1().ConfigMaps(h.Namespace).List(sctx, metav1.ListOptions{})
			}
		})
	}
	wg.Wait()
	after, err := h.throttled(ctx)
	return after - before, err
}

// throttled is the API server's count of 429 answers.
func (h *Harness) throttled(ctx context.Context) (int, error) {
	raw, err := h.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("could not read the API server's metrics: %w", err)
	}
	total := 0.0
	for line := range strings.Lines(string(raw)) {
		// Requests the in-flight limit refused are counted as terminations,
		// not in apiserver_request_total.
		if (strings.HasPrefix(line, "apiserver_request_total{") || strings.HasPrefix(line, "apiserver_request_terminations_total{")) &&
			strings.Contains(line, `code="429"`) {
			fields := strings.Fields(line)
			if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
				total += v
			}
		}
	}
	return int(total), nil
}
