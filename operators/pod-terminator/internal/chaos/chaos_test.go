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
		want           int
	}{
		{"thirty percent of ten", 10, 30, 0, 3},
		{"capped by the minimum", 10, 30, 8, 2},
		{"floor never rounds up", 3, 30, 0, 0},
		{"floor of 3.3", 11, 30, 0, 3},
		{"minimum above the live count", 5, 50, 8, 0},
		{"minimum equal to the live count", 8, 100, 8, 0},
		{"everything with no minimum", 7, 100, 0, 7},
		{"one percent of a hundred", 100, 1, 0, 1},
		{"no pods", 0, 50, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chaos.Count(tt.live, chaos.Policy{Percent: tt.pct, Minimum: tt.min}); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// cluster is a fake PodLister and PodDeleter.
type cluster struct {
	pods    []chaos.Pod
	deleted []string
	fail    map[string]error
}

func (c *cluster) ListPods(context.Context, chaos.Target) ([]chaos.Pod, error) {
	return slices.Clone(c.pods), nil
}

func (c *cluster) DeletePod(_ context.Context, p chaos.Pod) error {
	if err := c.fail[p.Name]; err != nil {
		return err
	}
	c.deleted = append(c.deleted, p.Name)
	return nil
}

func pods(n int) []chaos.Pod {
	var out []chaos.Pod
	for i := range n {
		out = append(out, chaos.Pod{Namespace: "ns", Name: fmt.Sprintf("p%d", i)})
	}
	return out
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

func TestTerminateDeletesTheCountOfLivePodsOnly(t *testing.T) {
	c := &cluster{pods: append(pods(10),
		chaos.Pod{Namespace: "ns", Name: "deleting", Deleting: true},
		chaos.Pod{Namespace: "ns", Name: "done", Finished: true})}
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
	for _, p := range []chaos.Policy{{Percent: 0}, {Percent: 150}, {Percent: 10, Minimum: -1}} {
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
		chaos.Pod{Namespace: "kube-system", Name: "dns"},
		chaos.Pod{Namespace: "kooper-system", Name: "pod-terminator"})}
	term := &chaos.Terminator{Pods: c, Deleter: c, Rand: seeded(3)}
	res, err := term.Terminate(context.Background(), chaos.Target{Exclude: []string{"kube-system", "kooper-system"}}, chaos.Policy{Percent: 100})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(c.deleted)
	if res.Live != 4 || !slices.Equal(c.deleted, []string{"p0", "p1", "p2", "p3"}) {
		t.Errorf("got live %d and deleted %v, want the 4 pods of ns only", res.Live, c.deleted)
	}
}
