package operators_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	chaosclient "github.com/kooperkit/kooper/apis/client/clientset/versioned/typed/chaos/v1beta1"
	"github.com/kooperkit/kooper/faults"
)

// The pod-terminator run's workload and PodTerminator: 6 pods, of which
// each period would take half but the minimum of 5 leaves one.
const (
	ptPods     = 6
	ptMinimum  = 5
	ptPercent  = 50
	ptPerRound = 1 // chaos.Count(6, {50%, minimum 5})
	// ptPeriod is the PodTerminator's period. A fault can hold back a
	// request that the API server then carries out, an eviction say, by up
	// to ptHeld: a blackhole of 3×leaseDuration, then 0.5-3s of latency
	// (±25%) each way.
	ptPeriod = 40 * time.Second
	ptHeld   = 3*leaseDuration + 8*time.Second
	// ptSpacing is the least time between two terminations that the run
	// accepts (a period, less what a fault may have delayed the first by):
	// less means two terminations in one period.
	ptSpacing = ptPeriod - ptHeld

	ptUser = "system:serviceaccount:kooper-pod-terminator:pod-terminator"
)

// TestPodTerminatorUnderFaults runs three replicas of the pod-terminator
// binary, under leader election as the operator's own ServiceAccount,
// each through a fault-injecting proxy, against a Deployment of 6 pods and
// a PodTerminator that may take one every 40s but must leave 5. Faults are
// mixed at random (FAULTS_SEED, FAULTS_OPERATOR_DURATION, default 60s);
// after each, and at the end, the run checks the operator's promises:
//
//   - no termination leaves fewer than minimumInstances live pods: each
//     removal in the API server's audit log is checked against a
//     consistent LIST of the pods read just before it (every 100ms);
//   - never two terminations in one period: the claims of periods in
//     status are a period apart at least, every eviction the API server
//     carried out (its audit log) comes ptSpacing after the last, and no
//     more pods went than periods were claimed;
//   - after the faults, status.terminatedTotal = the pods the API server
//     evicted for the operator = the pods seen deleting or gone (the
//     LISTs) = the pods named in Terminated Events; each live replica's
//     kooper_pod_terminator_terminated_pods_total = the pods named in the
//     Events it recorded (their source host is the replica), and no
//     replica's last scraped value ever exceeded its Events' count.
func TestPodTerminatorUnderFaults(t *testing.T) {
	s, d, rng, bin := begin(t, "pod-terminator", "chaos")
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	pts := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()

	ns := runName("faults-pt")
	ports := map[string]int{}
	for i := range 3 {
		ports[fmt.Sprintf("r%d", i+1)] = freePort(t)
	}
	h := &faults.Harness{
		Cluster: cluster, Namespace: ns, Dir: t.TempDir(), Logf: t.Logf,
		ServiceAccount: "kooper-pod-terminator/pod-terminator", Lease: "kooper-pod-terminator/pod-terminator", LeaseDuration: leaseDuration,
		Command: func(id, kubeconfig string) *exec.Cmd {
			name, _, _ := strings.Cut(id, "-")
			args := append([]string{"-kubeconfig", kubeconfig, "-namespace", "kooper-pod-terminator", "-webhook-addr=",
				fmt.Sprintf("-http-addr=127.0.0.1:%d", ports[name])}, leaseFlags()...)
			return exec.Command(bin, args...)
		},
	}
	startHarness(t, h, 3)

	labels := map[string]string{"app": "web"}
	_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](ptPods),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
					TerminationGracePeriodSeconds: ptr.To[int64](1)},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := pollPods(t, client, ns, ptMinimum)
	waitFor(t, 60*time.Second, fmt.Sprintf("%d live web pods", ptPods), func() bool { return pods.liveCount() == ptPods })

	name := runName("faults-pt")
	_, err = pts.Create(ctx, &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: labels},
			Namespaces:  []string{ns},
			Period:      &metav1.Duration{Duration: ptPeriod},
			Termination: chaosv1beta1.Termination{Percent: ptPercent, MinimumInstances: ptr.To[int32](ptMinimum)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pts.Delete(context.Background(), name, metav1.DeleteOptions{})
		// The replicas stop first (cleanups run last in, first out), so the
		// finalizer is taken off here.
		if pt, err := pts.Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			pt.Finalizers = nil
			_, _ = pts.Update(context.Background(), pt, metav1.UpdateOptions{})
		}
	})
	claims := watchClaims(t, pts, name)
	scrapes := scrapeReplicas(t, h, ports, name)

	check := func() error {
		removals := podRemovals(t, ptUser, ns)
		err := errors.Join(pods.check(removals), claims.err(), spacing(removals))
		if err != nil {
			var list []string
			for _, ev := range removals {
				list = append(list, fmt.Sprintf("%s %s %s", ev.StageTimestamp.Format("15:04:05.000000"), ev.Verb, ev.ObjectRef.Name))
			}
			err = fmt.Errorf("%w\nevictions and deletions in the audit log: %s", err, strings.Join(list, "; "))
		}
		return err
	}
	counts := mixFaults(t, h, rng, s, d, check)
	t.Logf("faults injected: %v", counts)

	// After the faults: one more termination by whichever replica leads,
	// so that a live replica has counted, then everything agrees.
	pt, err := pts.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := pt.Status.TerminatedTotal
	// Two periods and a minute: after an API server restart the controller
	// manager's watches were seen lagging for a minute, and its ReplicaSet
	// controller waiting for them before it replaces a pod, so a period
	// may find only the minimum live.
	waitFor(t, 2*ptPeriod+time.Minute, "a termination after the faults", func() bool {
		pt, err := pts.Get(ctx, name, metav1.GetOptions{})
		return err == nil && pt.Status.TerminatedTotal > after
	})
	// Status, audit log, pod LISTs and Events agree within 20s; if they do
	// not, the failure says how they differ.
	var report string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		report, err = accounts(ctx, t, client, pts, name, ns, pods, claims)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("seed %d: status, audit log, pod LISTs and Events disagree 20s after a termination: %v", s, err)
	}
	if err := check(); err != nil {
		t.Fatalf("seed %d: %v", s, err)
	}
	if err := scrapes.check(ctx, client, name); err != nil {
		t.Fatalf("seed %d: %v", s, err)
	}
	t.Logf("%s; %d periods claimed; the minimum of %d held at each removal (%d checked against a LIST read less than a second before)",
		report, claims.count(), ptMinimum, pods.checkedCount())
}

// podPoll reads the pods of a namespace every 100ms with a consistent LIST
// (what the operator reads), and keeps each snapshot. A watch will not do:
// after an API server restart its watches (ours, the controller manager's)
// were seen lagging the API server's state by 10-20s, which a LIST read
// from etcd does not. The minimum is checked at each removal in the audit
// log against the last snapshot read before the API server received it.
type podPoll struct {
	minimum int

	mu        sync.Mutex
	snapshots []podSnapshot
	present   map[string]bool // pods present, not deleting, in the last snapshot
	removed   map[string]bool // pods seen deleting, or gone, after being seen
	removals  []string
	checked   int // removals checked against a snapshot
}

// podSnapshot is one LIST: read between began and ended.
type podSnapshot struct {
	began, ended time.Time
	live         map[string]bool // Ready and not deleting, by pod name
}

func pollPods(t *testing.T, client kubernetes.Interface, ns string, minimum int) *podPoll {
	w := &podPoll{minimum: minimum, present: map[string]bool{}, removed: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			began := time.Now()
			lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
			list, err := client.CoreV1().Pods(ns).List(lctx, metav1.ListOptions{})
			lcancel()
			if err == nil {
				w.add(podSnapshot{began: began, ended: time.Now(), live: livePods(list.Items)}, list.Items)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

// livePods are the pods the pod-terminator counts: Running, Ready, not
// deleting.
func livePods(pods []corev1.Pod) map[string]bool {
	live := map[string]bool{}
	for _, p := range pods {
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		if ready && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			live[p.Name] = true
		}
	}
	return live
}

func (w *podPoll) add(snap podSnapshot, pods []corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.snapshots = append(w.snapshots, snap)
	present := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			present[p.Name] = true
		}
	}
	for name := range w.present {
		if !present[name] && !w.removed[name] {
			w.removed[name] = true
			w.removals = append(w.removals, name)
		}
	}
	w.present = present
}

func (w *podPoll) liveCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.snapshots) == 0 {
		return 0
	}
	return len(w.snapshots[len(w.snapshots)-1].live)
}

func (w *podPoll) checkedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checked
}

func (w *podPoll) removalsSeen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.removals)
}

// check checks each removal of the audit log against the last snapshot
// read before the API server received it, if one ended less than a second
// before (none while the API server was down): the pods live then, less
// the removed one, must be at least the minimum. A replacement pod that
// became Ready between that snapshot and the removal would be missed, and
// the check fail wrongly; the operator does not act on it within 100ms,
// though (it waits for its next period).
func (w *podPoll) check(removals []auditEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var problems []string
	checked := 0
	for _, ev := range removals {
		i := sort.Search(len(w.snapshots), func(i int) bool { return !w.snapshots[i].ended.Before(ev.RequestReceivedTimestamp) }) - 1
		if i < 0 || ev.RequestReceivedTimestamp.Sub(w.snapshots[i].ended) > time.Second {
			continue
		}
		checked++
		snap := w.snapshots[i]
		left := len(snap.live)
		if snap.live[ev.ObjectRef.Name] {
			left--
		}
		if left < w.minimum {
			names := slices.Sorted(maps.Keys(snap.live))
			problems = append(problems, fmt.Sprintf("%s removed at %s left %d live pods, fewer than the minimum %d (live %s before: %s)",
				ev.ObjectRef.Name, ev.StageTimestamp.Format("15:04:05.000"), left, w.minimum,
				ev.RequestReceivedTimestamp.Sub(snap.began).Round(time.Millisecond), strings.Join(names, ", ")))
		}
	}
	w.checked = checked
	if len(problems) > 0 {
		return fmt.Errorf("%d terminations below the minimum: %s", len(problems), strings.Join(problems, "; "))
	}
	return nil
}

// claimWatch reads a PodTerminator's status.lastTerminationTime (the period
// each replica claims before it terminates) every 200ms, and checks that
// each claim comes a period after the last. A claim stands for a period,
// so reads this often see every one (a watch may lag; see podPoll).
type claimWatch struct {
	mu         sync.Mutex
	last       *time.Time
	claims     int
	violations []string
}

func watchClaims(t *testing.T, pts chaosclient.PodTerminatorInterface, name string) *claimWatch {
	t.Helper()
	w := &claimWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
			pt, err := pts.Get(gctx, name, metav1.GetOptions{})
			gcancel()
			if err == nil {
				w.see(pt)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

func (w *claimWatch) see(pt *chaosv1beta1.PodTerminator) {
	if pt.Status.LastTerminationTime == nil {
		return
	}
	at := pt.Status.LastTerminationTime.Time
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil && at.Equal(*w.last) {
		return
	}
	if w.last != nil && at.Sub(*w.last) < ptPeriod {
		w.violations = append(w.violations, fmt.Sprintf("a period claimed at %s, %s after the last", at.Format("15:04:05.000"), at.Sub(*w.last)))
	}
	w.last = &at
	w.claims++
}

func (w *claimWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.claims
}

func (w *claimWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) > 0 {
		return fmt.Errorf("periods claimed less than %s apart: %s", ptPeriod, strings.Join(w.violations, "; "))
	}
	return nil
}

// spacing checks that the API server carried out no two removals less
// than ptSpacing apart (one pod per period here).
func spacing(removals []auditEvent) error {
	for i := 1; i < len(removals); i++ {
		if gap := removals[i].StageTimestamp.Sub(removals[i-1].StageTimestamp); gap < ptSpacing {
			return fmt.Errorf("two terminations in one period: %s at %s and %s %s later (the API server's audit log)",
				removals[i-1].ObjectRef.Name, removals[i-1].StageTimestamp.Format("15:04:05.000000"), removals[i].ObjectRef.Name, gap)
		}
	}
	return nil
}

// accounts compares status.terminatedTotal, the audit log's removals, the
// pod watch's and the pods the Terminated Events name.
func accounts(ctx context.Context, t *testing.T, client kubernetes.Interface, pts ptClient, name, ns string, pods *podPoll, claims *claimWatch) (string, error) {
	pt, err := pts.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	audited := podRemovals(t, ptUser, ns)
	seen := pods.removalsSeen()
	named, _, err := eventPods(ctx, client, name)
	if err != nil {
		return "", err
	}
	total := int(pt.Status.TerminatedTotal)
	auditedNames := map[string]bool{}
	for _, ev := range audited {
		auditedNames[ev.ObjectRef.Name] = true
	}
	var problems []string
	if len(audited) != len(auditedNames) {
		problems = append(problems, fmt.Sprintf("the audit log has %d removals of %d pods: one pod removed twice", len(audited), len(auditedNames)))
	}
	if total != len(audited) || total != len(seen) || total != len(named) {
		problems = append(problems, fmt.Sprintf("status.terminatedTotal %d, removals in the audit log %d, pods seen deleting or gone %d, pods named in Terminated Events %d",
			total, len(audited), len(seen), len(named)))
	}
	for p := range named {
		if !auditedNames[strings.TrimPrefix(p, ns+"/")] {
			problems = append(problems, "an Event names "+p+", which the audit log does not show removed")
		}
	}
	if claimed := claims.count(); len(audited) > claimed*ptPerRound {
		problems = append(problems, fmt.Sprintf("%d pods removed in %d periods claimed: at most %d a period", len(audited), claimed, ptPerRound))
	}
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "; "))
	}
	return fmt.Sprintf("status.terminatedTotal = audit log = pod LISTs = Events = %d", total), nil
}

type ptClient interface {
	Get(context.Context, string, metav1.GetOptions) (*chaosv1beta1.PodTerminator, error)
}

// eventPods returns the pods named in the Terminated Events of
// PodTerminator name, and how many each replica (the Events' source host)
// named.
func eventPods(ctx context.Context, client kubernetes.Interface, name string) (map[string]bool, map[string]int, error) {
	list, err := client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", name),
			fields.OneTermEqualSelector("reason", "Terminated")).String(),
	})
	if err != nil {
		return nil, nil, err
	}
	pods, byHost := map[string]bool{}, map[string]int{}
	for _, ev := range list.Items {
		_, names, ok := strings.Cut(ev.Message, ": ")
		if !ok {
			return nil, nil, fmt.Errorf("a Terminated Event names no pod: %q", ev.Message)
		}
		for p := range strings.SplitSeq(names, ", ") {
			pods[p] = true
			byHost[ev.Source.Host]++
		}
	}
	return pods, byHost, nil
}

// replicaScrapes scrapes each replica's /metrics every 250ms, as
// Prometheus would, keeping each process's last value of the terminated
// pods counter.
type replicaScrapes struct {
	mu   sync.Mutex
	last map[string]float64 // by replica process id
	h    *faults.Harness
	urls map[string]string // by replica name
	name string
}

func scrapeReplicas(t *testing.T, h *faults.Harness, ports map[string]int, name string) *replicaScrapes {
	s := &replicaScrapes{last: map[string]float64{}, h: h, urls: map[string]string{}, name: name}
	for r, p := range ports {
		s.urls[r] = fmt.Sprintf("http://127.0.0.1:%d/metrics", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, r := range h.Replicas() {
				s.scrapeOne(r)
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

// scrapeOne scrapes r's current process, and keeps the value if the
// process was the same before and after.
func (s *replicaScrapes) scrapeOne(r *faults.Replica) (id string, v float64, ok bool) {
	id = r.ID()
	v, ok = scrape(s.urls[r.Name], "kooper_pod_terminator_terminated_pods_total", map[string]string{"terminator": s.name, "dry_run": "false"})
	if !ok || r.ID() != id {
		return id, 0, false
	}
	s.mu.Lock()
	s.last[id] = v
	s.mu.Unlock()
	return id, v, true
}

// check compares each replica's counter with the pods named in the Events
// it recorded: equal for the replicas alive now, and never more for those
// that died (their last increments may have died with them, unscraped, as
// a counter's do).
func (s *replicaScrapes) check(ctx context.Context, client kubernetes.Interface, name string) error {
	_, byHost, err := eventPods(ctx, client, name)
	if err != nil {
		return err
	}
	var problems []string
	alive := map[string]bool{}
	for _, r := range s.h.Replicas() {
		id, v, ok := s.scrapeOne(r)
		if !ok {
			continue
		}
		alive[id] = true
		if int(v) != byHost[id] {
			problems = append(problems, fmt.Sprintf("replica %s counted %v terminated pods, its Events name %d", id, v, byHost[id]))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.last))
	for id := range s.last {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if v := s.last[id]; !alive[id] && int(v) > byHost[id] {
			problems = append(problems, fmt.Sprintf("replica %s's last scrape counted %v terminated pods, its Events name %d", id, v, byHost[id]))
		}
	}
	if len(alive) == 0 {
		problems = append(problems, "no replica's /metrics answered")
	}
	if len(problems) > 0 {
		return fmt.Errorf("the terminated pods metric: %s", strings.Join(problems, "; "))
	}
	return nil
}

// podRemovals are the pod evictions and deletions in namespace ns that the
// API server carried out (2xx) for user, in the audit log, oldest first.
func podRemovals(t *testing.T, user, ns string) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // a line being written
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != user || ev.ObjectRef.Namespace != ns ||
			ev.ObjectRef.Resource != "pods" || ev.ResponseStatus.Code/100 != 2 {
			continue
		}
		if (ev.Verb == "create" && ev.ObjectRef.Subresource == "eviction") || (ev.Verb == "delete" && ev.ObjectRef.Subresource == "") {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scrape returns the value of the series of metric name with labels, in
// the text exposition served at url; ok is false if it is not there or
// the URL does not answer.
func scrape(url, name string, labels map[string]string) (v float64, ok bool) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		match := true
		for k, val := range labels {
			if !strings.Contains(line, k+`="`+val+`"`) {
				match = false
			}
		}
		if !match {
			continue
		}
		fields := strings.Fields(line)
		f, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		return f, err == nil
	}
	return 0, false
}
