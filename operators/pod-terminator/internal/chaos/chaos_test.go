package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
)

func TestCountFollowsTheRoundingRule(t *testing.T) {
	tests := []struct {
		name           string
		live, pct, min int
		max            int
		want           int
	}{
		{"thirty percent of ten", 10, 30, 0, 0, 3},
		{"capped by the minimum", 10, 30, 8, 0, 2},
		{"floor never rounds up", 3, 30, 0, 0, 0},
		{"floor of 3.3", 11, 30, 0, 0, 3},
		{"minimum above the live count", 5, 50, 8, 0, 0},
		{"minimum equal to the live count", 8, 100, 8, 0, 0},
		{"everything with no minimum", 7, 100, 0, 0, 7},
		{"one percent of a hundred", 100, 1, 0, 0, 1},
		{"no pods", 0, 50, 0, 0, 0},
		{"capped by maxPods", 10, 50, 0, 2, 2},
		{"maxPods above the percent's count", 10, 30, 0, 5, 3},
		{"maxPods and the minimum: the smaller", 10, 50, 9, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chaos.Count(tt.live, chaos.Policy{Percent: tt.pct, Minimum: tt.min, Max: tt.max}); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// cluster is a fake PodLister and PodDeleter.
type cluster struct {
	pods    []chaos.Pod
	deleted []string
	methods []chaos.Method
	fail    map[string]error
}

func (c *cluster) ListPods(context.Context, chaos.Target) ([]chaos.Pod, error) {
	return slices.Clone(c.pods), nil
}

func (c *cluster) DeletePod(_ context.Context, p chaos.Pod, m chaos.Method) error {
	c.methods = append(c.methods, m)
	if err := c.fail[p.Name]; err != nil {
		return err
	}
	c.deleted = append(c.deleted, p.Name)
	return nil
}

func pods(n int) []chaos.Pod {
	var out []chaos.Pod
	for i := range n {
		out = append(out, chaos.Pod{Namespace: "ns", Name: fmt.Sprintf("p%d", i), Ready: true})
	}
	return out
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

func TestTerminateDeletesTheCountOfLivePodsOnly(t *testing.T) {
	c := &cluster{pods: append(pods(10),
		chaos.Pod{Namespace: "ns", Name: "deleting", Ready: true, Deleting: true},
		chaos.Pod{Namespace: "ns", Name: "done", Ready: true, Finished: true})}
	term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(1)}
	res, err := term.Terminate(context.Background(), chaos.Target{}, chaos.Policy{Percent: 30, Minimum: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.Live != 10 || len(res.Terminated) != 2 || len(c.deleted) != 2 {
		t.Fatalf("got live %d, terminated %v, deleted %v; want 10 live and 2 deleted", res.Live, res.Terminated, c.deleted)
	}
	for _, name := range c.deleted {
		if name == "deleting" || name == "done" {
			t.Errorf("deleted %s, which is not live", name)
		}
	}
}

func TestADryRunDeletesNothingButSaysWhatItWouldHave(t *testing.T) {
	c := &cluster{pods: pods(10)}
	term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(2)}
	res, err := term.Terminate(context.Background(), chaos.Target{}, chaos.Policy{Percent: 50, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.deleted) != 0 {
		t.Errorf("got %v deleted in a dry run, want none", c.deleted)
	}
	if !res.DryRun || len(res.Terminated) != 5 {
		t.Errorf("got result %+v, want 5 pods chosen in a dry run", res)
	}
}

func TestTheChoiceIsRandomAndCoversEveryPod(t *testing.T) {
	seen := map[string]int{}
	r := seeded(3)
	for range 2000 {
		c := &cluster{pods: pods(10)}
		term := &chaos.Terminator{Pods: c, Deleter: c, Rand: r}
		if _, err := term.Terminate(context.Background(), chaos.Target{}, chaos.Policy{Percent: 10}); err != nil {
			t.Fatal(err)
		}
		seen[c.deleted[0]]++
	}
	// Each of 10 pods is chosen about 200 times in 2000 draws.
	for _, p := range pods(10) {
		if n := seen[p.Name]; n < 120 || n > 280 {
			t.Errorf("pod %s chosen %d times of 2000, want about 200", p.Name, n)
		}
	}
}

func TestDeleteErrorsAreReportedAfterTryingTheRest(t *testing.T) {
	boom := errors.New("boom")
	c := &cluster{pods: pods(4), fail: map[string]error{"p0": boom, "p1": chaos.ErrPodGone}}
	term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(4)}
	res, err := term.Terminate(context.Background(), chaos.Target{}, chaos.Policy{Percent: 100})
	if !errors.Is(err, boom) {
		t.Errorf("got error %v, want one wrapping %v", err, boom)
	}
	if len(c.deleted) != 2 || len(res.Terminated) != 2 {
		t.Errorf("got deleted %v and terminated %v, want the 2 pods that could be deleted", c.deleted, res.Terminated)
	}
}

func TestAnInvalidPolicyIsRefusedBeforeAnything(t *testing.T) {
	for _, p := range []chaos.Policy{{Percent: 0}, {Percent: 150}, {Percent: 10, Minimum: -1}, {Percent: 10, Method: 7}} {
		c := &cluster{pods: pods(3)}
		term := &chaos.Terminator{Pods: c, Deleter: c}
		if _, err := term.Terminate(context.Background(), chaos.Target{}, p); err == nil {
			t.Errorf("got no error for policy %+v", p)
		}
		if len(c.deleted) != 0 {
			t.Errorf("deleted %v for an invalid policy", c.deleted)
		}
	}
}

func TestDueSaysWhenTheNextPeriodStarts(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	tests := []struct {
		name     string
		last     *time.Time
		wantDue  bool
		wantWait time.Duration
	}{
		{"never ran", nil, true, 0},
		{"a period ago", ago(time.Minute), true, 0},
		{"longer ago", ago(time.Hour), true, 0},
		{"20s ago", ago(20 * time.Second), false, 40 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, wait := chaos.Due(tt.last, time.Minute, now)
			if due != tt.wantDue || wait != tt.wantWait {
				t.Errorf("got due %t wait %s, want %t %s", due, wait, tt.wantDue, tt.wantWait)
			}
		})
	}
}

func TestPodsInExcludedNamespacesAreNeverCandidates(t *testing.T) {
	c := &cluster{pods: append(pods(4),
		chaos.Pod{Namespace: "kube-system", Name: "dns", Ready: true},
		chaos.Pod{Namespace: "kooper-pod-terminator", Name: "pod-terminator", Ready: true})}
	term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(3)}
	res, err := term.Terminate(context.Background(), chaos.Target{Exclude: []string{"kube-system", "kooper-pod-terminator"}}, chaos.Policy{Percent: 100})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(c.deleted)
	if res.Live != 4 || !slices.Equal(c.deleted, []string{"p0", "p1", "p2", "p3"}) {
		t.Errorf("got live %d and deleted %v, want the 4 pods of ns only", res.Live, c.deleted)
	}
}

func TestOnlyReadyPodsCountAndAreChosen(t *testing.T) {
	notReady := []chaos.Pod{
		{Namespace: "ns", Name: "starting"},
		{Namespace: "ns", Name: "ready-but-deleting", Ready: true, Deleting: true},
		{Namespace: "ns", Name: "ready-but-finished", Ready: true, Finished: true},
	}
	tests := []struct {
		name          string
		ready         int
		pct, min      int
		wantLive      int
		wantTerminate int
	}{
		{"three ready, minimum two, everything", 3, 100, 2, 3, 1},
		{"no ready pod terminates nothing", 0, 100, 0, 0, 0},
		{"ready pods at the minimum terminate nothing", 2, 100, 2, 2, 0},
		{"half of ten ready", 10, 50, 0, 10, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cluster{pods: append(pods(tt.ready), notReady...)}
			term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(5)}
			res, err := term.Terminate(context.Background(), chaos.Target{}, chaos.Policy{Percent: tt.pct, Minimum: tt.min})
			if err != nil {
				t.Fatal(err)
			}
			if res.Live != tt.wantLive || len(c.deleted) != tt.wantTerminate {
				t.Errorf("got live %d and deleted %v, want live %d and %d deleted", res.Live, c.deleted, tt.wantLive, tt.wantTerminate)
			}
			for _, name := range c.deleted {
				if name[0] != 'p' {
					t.Errorf("deleted %s, which is not a live pod", name)
				}
			}
		})
	}
}

func TestARefusedEvictionIsSkippedUntilTheNextPeriod(t *testing.T) {
	budget := fmt.Errorf("%w: ns/p0: too many requests", chaos.ErrDisruptionBudget)
	boom := errors.New("boom")
	tests := []struct {
		name           string
		fail           map[string]error
		wantTerminated int
		wantRefused    []string
		wantErr        error
	}{
		{"one refused", map[string]error{"p0": budget}, 3, []string{"p0"}, nil},
		{"every one refused", map[string]error{"p0": budget, "p1": budget, "p2": budget, "p3": budget}, 0, []string{"p0", "p1", "p2", "p3"}, nil},
		{"refused and failed", map[string]error{"p0": budget, "p1": boom}, 2, []string{"p0"}, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cluster{pods: pods(4), fail: tt.fail}
			term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(6)}
			res, err := term.Terminate(context.Background(), chaos.Target{}, chaos.Policy{Percent: 100})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
			if errors.Is(err, chaos.ErrDisruptionBudget) {
				t.Errorf("got error %v, want a refusal never to be an error", err)
			}
			var refused []string
			for _, p := range res.Refused {
				refused = append(refused, p.Name)
			}
			slices.Sort(refused)
			if len(res.Terminated) != tt.wantTerminated || !slices.Equal(refused, tt.wantRefused) {
				t.Errorf("got terminated %v and refused %v, want %d terminated and %v refused", res.Terminated, refused, tt.wantTerminated, tt.wantRefused)
			}
			if len(c.methods) != 4 {
				t.Errorf("got %d termination calls, want each of the 4 chosen pods tried once", len(c.methods))
			}
		})
	}
}

func TestThePolicysMethodReachesTheDeleter(t *testing.T) {
	for _, m := range []chaos.Method{chaos.Evict, chaos.Delete} {
		c := &cluster{pods: pods(2)}
		term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(7)}
		if _, err := term.Terminate(context.Background(), chaos.Target{}, chaos.Policy{Percent: 100, Method: m}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.methods, []chaos.Method{m, m}) {
			t.Errorf("got methods %v, want %v twice", c.methods, m)
		}
	}
}
