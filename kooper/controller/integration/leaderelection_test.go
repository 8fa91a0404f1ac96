package integration_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// handling is one handler call of one replica.
type handling struct {
	identity   string
	start, end time.Time
}

type handlings struct {
	mu  sync.Mutex
	all []handling
}

func (h *handlings) record(identity string, start, end time.Time) {
	h.mu.Lock()
	h.all = append(h.all, handling{identity, start, end})
	h.mu.Unlock()
}

func (h *handlings) since(t time.Time) []handling {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []handling
	for _, x := range h.all {
		if x.start.After(t) {
			out = append(out, x)
		}
	}
	return out
}

func identities(hs []handling) []string {
	var ids []string
	for _, h := range hs {
		if !slices.Contains(ids, h.identity) {
			ids = append(ids, h.identity)
		}
	}
	return ids
}

// Three replicas share one Lease over a steady stream of events, with
// handlers lasting 200ms. Only the leader handles; a cancelled leader hands
// over quickly; a leader whose Lease is taken stops handling and its Run
// fails; two identities never handle at the same time.
func TestOnlyTheLeaderHandlesAndLeadersNeverOverlap(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	const (
		leaseDuration = 3 * time.Second
		renewDeadline = 2 * time.Second
		retryPeriod   = 500 * time.Millisecond
	)
	for i := range 3 {
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	rec := &handlings{}
	type replica struct {
		runner *leaderelection.Runner
		stop   func() error
		done   <-chan struct{}
		err    error
	}
	replicas := map[string]*replica{}
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		ctrl, err := controller.New(controller.Config{
			Name: "leader-" + id, Retriever: configMaps(client, ns), ResyncInterval: -1,
			ShutdownTimeout: 400 * time.Millisecond,
			Handler: controller.HandlerFunc(func(_ context.Context, _ runtime.Object) error {
				start := time.Now()
				time.Sleep(200 * time.Millisecond)
				rec.record(id, start, time.Now())
				return nil
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		runner, err := leaderelection.New(leaderelection.Config{
			Name: "kooper-it", Namespace: ns, Client: client.CoordinationV1(), Identity: id,
			LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		}, ctrl)
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{runner: runner}
		r.stop, r.done = runInBackground(t, func(ctx context.Context) error {
			r.err = runner.Run(ctx)
			return r.err
		})
		replicas[id] = r
	}

	// A steady stream of events.
	streamCtx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	go func() {
		for i := 0; streamCtx.Err() == nil; i++ {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(streamCtx, fmt.Sprintf("cm-%d", i%3), metav1.GetOptions{})
			if err == nil {
				cm.Data = map[string]string{"i": fmt.Sprint(i)}
				_, _ = client.CoreV1().ConfigMaps(ns).Update(streamCtx, cm, metav1.UpdateOptions{})
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	// 1. One leader handles, alone.
	began := time.Now()
	eventually(t, 20*time.Second, "a leader handles", func() bool { return len(rec.since(began)) > 0 })
	time.Sleep(2 * time.Second)
	ids := identities(rec.since(began))
	if len(ids) != 1 {
		t.Fatalf("got handlings by %v in a steady state, want one leader", ids)
	}
	first := ids[0]
	// Leading and Standby follow the Lease: its holder leads, the others
	// stand by.
	for id, r := range replicas {
		checkRole(t, client, ns, id, r.runner)
	}

	// 2. Cancel the leader: another takes over within LeaseDuration + RetryPeriod.
	cancelled := time.Now()
	if err := replicas[first].stop(); err != nil {
		t.Errorf("got the cancelled leader's Run error %v, want nil", err)
	}
	var second string
	eventually(t, leaseDuration+retryPeriod, "another replica takes over", func() bool {
		for _, id := range identities(rec.since(cancelled)) {
			if id != first {
				second = id
				return true
			}
		}
		return false
	})
	t.Logf("%s took over %s after %s was cancelled", second, time.Since(cancelled).Round(time.Millisecond), first)
	if replicas[first].runner.Leading() {
		t.Errorf("got %s leading after its Run returned", first)
	}
	for id, r := range replicas {
		if id != first {
			checkRole(t, client, ns, id, r.runner)
		}
	}

	// 3. Another holder writes the Lease: the leader loses it, stops
	// handling, and its Run returns ErrLeaseLost.
	lease, err := client.CoordinationV1().Leases(ns).Get(ctx, "kooper-it", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("intruder")
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(leaseDuration / time.Second))
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	lease.Spec.AcquireTime = lease.Spec.RenewTime
	if _, err := client.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	select {
	case <-replicas[second].done:
	case <-time.After(retryPeriod + renewDeadline + 5*time.Second):
		t.Fatalf("%s still runs %s after its Lease was taken", second, time.Since(taken))
	}
	if err := replicas[second].err; !errors.Is(err, leaderelection.ErrLeaseLost) {
		t.Errorf("got %s's Run error %v, want %v", second, err, leaderelection.ErrLeaseLost)
	}
	if replicas[second].runner.Leading() {
		t.Errorf("got %s leading after it lost the Lease", second)
	}
	// The third replica takes over once the intruder's Lease expires.
	var third string
	eventually(t, 2*leaseDuration+retryPeriod, "the last replica takes over", func() bool {
		for _, id := range identities(rec.since(taken)) {
			if id != first && id != second {
				third = id
				return true
			}
		}
		return false
	})
	checkRole(t, client, ns, third, replicas[third].runner)
	stopStream()
	_ = replicas[third].stop()

	// Never two identities handling at once.
	all := rec.since(began)
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.identity != b.identity && a.start.Before(b.end) && b.start.Before(a.end) {
				t.Errorf("%s handled %s-%s while %s handled %s-%s", a.identity, a.start.Format("15:04:05.000"), a.end.Format("15:04:05.000"),
					b.identity, b.start.Format("15:04:05.000"), b.end.Format("15:04:05.000"))
			}
		}
	}
	if got := identities(all); len(got) < 3 {
		t.Errorf("got handlings by %v, want all three replicas in turn", got)
	}
	if lastOfSecond := lastEnd(all, second); !lastOfSecond.IsZero() && lastOfSecond.After(taken.Add(retryPeriod+renewDeadline+time.Second)) {
		t.Errorf("%s handled until %s, more than RetryPeriod+RenewDeadline after losing the Lease", second, lastOfSecond.Sub(taken))
	}
}

// checkRole checks that a running replica's Leading and Standby agree with
// the Lease kooper-it: the holder leads, any other replica stands by.
func checkRole(t *testing.T, client kubernetes.Interface, ns, id string, r *leaderelection.Runner) {
	t.Helper()
	lease, err := client.CoordinationV1().Leases(ns).Get(context.Background(), "kooper-it", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	leading, standby := r.Leading(), r.Standby()
	if want := id == holder; leading != want || standby == want {
		t.Errorf("got %s leading %v and standby %v while %q holds the Lease, want leading %v and standby %v",
			id, leading, standby, holder, want, !want)
	}
}

func lastEnd(hs []handling, id string) time.Time {
	var last time.Time
	for _, h := range hs {
		if h.identity == id && h.end.After(last) {
			last = h.end
		}
	}
	return last
}
