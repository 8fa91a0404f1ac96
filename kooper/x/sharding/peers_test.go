package sharding

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// lease is a Lease of group "pods" with the annotations count and slots
// ("-" leaves one out).
func lease(name, count, slots string) *coordinationv1.Lease {
	ann := map[string]string{}
	if count != "-" {
		ann[AnnotationSlotCount] = count
	}
	if slots != "-" {
		ann[AnnotationSlots] = slots
	}
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels: map[string]string{LabelGroup: "pods"}, Annotations: ann},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](15)},
	}
}

func set(slots ...int) map[int]bool {
	out := map[int]bool{}
	for _, s := range slots {
		out[s] = true
	}
	return out
}

func sorted(m map[int]bool) []int { return slices.Sorted(maps.Keys(m)) }

// What one step of a replica "pods-self" with 4 slots makes of the other
// Leases: the slots it should own, the slots it must not take, and what it
// reports.
func TestJudgeReadsEachKindOfLease(t *testing.T) {
	tests := []struct {
		name     string
		others   []*coordinationv1.Lease
		verified []int // held by this replica (and claimed)
		want     []int
		claimed  map[int][]string
		reported []string // the Leases named in findings
	}{
		{
			name: "a replica alone owns every slot",
			want: []int{0, 1, 2, 3}, claimed: map[int][]string{},
		},
		{
			name:   "a member shares the slots and keeps its claims",
			others: []*coordinationv1.Lease{lease("pods-a", "4", "0-1")},
			want:   []int{2, 3}, claimed: map[int][]string{0: {"pods-a"}, 1: {"pods-a"}},
		},
		{
			name:   "a Lease with another slot count is no member, and the slots its claims overlap are left to it",
			others: []*coordinationv1.Lease{lease("pods-x", "8", "2-3")},
			want:   []int{0, 1, 2, 3}, claimed: map[int][]string{1: {"pods-x"}},
			reported: []string{"pods-x"},
		},
		{
			name:   "a slot of a Lease with fewer slots spans whole slots",
			others: []*coordinationv1.Lease{lease("pods-x", "2", "1")},
			want:   []int{0, 1, 2, 3}, claimed: map[int][]string{2: {"pods-x"}, 3: {"pods-x"}},
			reported: []string{"pods-x"},
		},
		{
			name: "unreadable annotations are ignored",
			others: []*coordinationv1.Lease{
				lease("pods-no-count", "-", "0-3"), lease("pods-word", "four", "0-3"), lease("pods-three", "3", "0-2"),
				lease("pods-too-many", "512", "0"), lease("pods-zero", "0", ""), lease("pods-bad-slots", "4", "0-9"),
				lease("pods-garbage", "4", "x,,-"), lease("pods-huge", "4", strings.Repeat("1,", 5000)+"x"),
			},
			want: []int{0, 1, 2, 3}, claimed: map[int][]string{},
			reported: []string{"pods-bad-slots", "pods-garbage", "pods-huge", "pods-no-count", "pods-three", "pods-too-many", "pods-word", "pods-zero"},
		},
		{
			name:     "an unknown holder with another slot count claiming every slot takes no held slot",
			others:   []*coordinationv1.Lease{lease("pods-0", "64", "0-63")},
			verified: []int{0, 1},
			want:     []int{0, 1, 2, 3},
			claimed:  map[int][]string{0: {"pods-0"}, 1: {"pods-0"}, 2: {"pods-0"}, 3: {"pods-0"}},
			reported: []string{"pods-0"},
		},
		{
			name:     "a member that claims slots this replica holds is not counted",
			others:   []*coordinationv1.Lease{lease("pods-0", "4", "0-3")},
			verified: []int{0, 1},
			want:     []int{0, 1, 2, 3},
			claimed:  map[int][]string{0: {"pods-0"}, 1: {"pods-0"}, 2: {"pods-0"}, 3: {"pods-0"}},
		},
		{
			name:     "a member that claims only free slots is counted",
			others:   []*coordinationv1.Lease{lease("pods-0", "4", "2-3")},
			verified: []int{0, 1},
			want:     []int{0, 1}, claimed: map[int][]string{2: {"pods-0"}, 3: {"pods-0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeers(4, time.Second)
			got := p.judge(time.Now(), readLeases(tt.others, 4), "pods-self", set(tt.verified...), set(tt.verified...))
			if !slices.Equal(sorted(got.want), tt.want) {
				t.Errorf("got want %v, want %v", sorted(got.want), tt.want)
			}
			if !maps.EqualFunc(got.claimed, tt.claimed, slices.Equal) {
				t.Errorf("got claimed %v, want %v", got.claimed, tt.claimed)
			}
			var reported []string
			for _, f := range got.news {
				reported = append(reported, fmt.Sprint(f.kv[1]))
				for i := 1; i < len(f.kv); i += 2 {
					if v, ok := f.kv[i].(string); ok && len(v) > 70 {
						t.Errorf("finding %q logs %d characters of %v", f.msg, len(v), f.kv[i-1])
					}
				}
			}
			slices.Sort(reported)
			if !slices.Equal(reported, tt.reported) {
				t.Errorf("got findings about %v, want %v", reported, tt.reported)
			}
			if got.starved != "" {
				t.Errorf("starved at once: %s", got.starved)
			}
		})
	}
}

// A finding is reported once per Lease, however often it is renewed, and
// again for a new Lease of the same name.
func TestJudgeReportsOncePerLease(t *testing.T) {
	p := newPeers(4, time.Second)
	now := time.Now()
	news := 0
	for i := range 10 {
		x := lease("pods-x", "8", "0-7")
		x.ResourceVersion = fmt.Sprint(i)
		news += len(p.judge(now.Add(time.Duration(i)*time.Second), readLeases([]*coordinationv1.Lease{x}, 4), "pods-self", nil, nil).news)
	}
	if news != 1 {
		t.Errorf("got %d findings over 10 renewals, want 1", news)
	}
	x := lease("pods-x", "8", "0-7")
	x.UID = "another"
	if got := p.judge(now, readLeases([]*coordinationv1.Lease{x}, 4), "pods-self", nil, nil).news; len(got) != 1 {
		t.Errorf("got %d findings for a new Lease of the same name, want 1", len(got))
	}
}

// A member that claims a held slot is reported only once it has kept
// doing so for the grace period: a replica does so until its next check.
func TestJudgeReportsAContestedSlotAfterGrace(t *testing.T) {
	p := newPeers(4, time.Second)
	now := time.Now()
	others := readLeases([]*coordinationv1.Lease{lease("pods-0", "4", "0")}, 4)
	if got := p.judge(now, others, "pods-self", set(0, 1), set(0, 1)); len(got.news) != 0 {
		t.Errorf("reported at once: %v", got.news)
	}
	if got := p.judge(now.Add(time.Second), others, "pods-self", set(0, 1), set(0, 1)); len(got.news) != 1 {
		t.Errorf("got %d findings after the grace period, want 1", len(got.news))
	}
}

// A member that leaves its share unclaimed (nobody claims it) is no
// longer counted after the grace period, so the others take the share
// back; it is counted again once its claims change.
func TestJudgeStopsCountingAMemberThatTakesNoShare(t *testing.T) {
	p := newPeers(4, time.Second)
	now := time.Now()
	silent := readLeases([]*coordinationv1.Lease{lease("pods-0", "4", "")}, 4)
	mine := set(2, 3)
	step := func(at time.Duration, others []other) []int {
		return sorted(p.judge(now.Add(at), others, "pods-self", mine, mine).want)
	}
	if got := step(0, silent); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("a new member: got want %v, want [2 3]", got)
	}
	if got := step(500*time.Millisecond, silent); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("within grace: got want %v, want [2 3]", got)
	}
	step(time.Second, silent) // excluded from the next step
	if got := step(1500*time.Millisecond, silent); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("after grace: got want %v, want every slot", got)
	}
	claiming := readLeases([]*coordinationv1.Lease{lease("pods-0", "4", "0")}, 4)
	if got := step(2*time.Second, claiming); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("once it claims: got want %v, want [2 3]", got)
	}
}

// A replica that holds no slot while it should own some is starved after
// the grace period, and says who holds its slots.
func TestJudgeSaysWhoStarvesAReplica(t *testing.T) {
	p := newPeers(4, time.Second)
	now := time.Now()
	others := readLeases([]*coordinationv1.Lease{lease("pods-x", "64", "0-63"), lease("pods-garbage", "x", "0-3")}, 4)
	if got := p.judge(now, others, "pods-self", nil, nil); got.starved != "" {
		t.Errorf("starved at once: %s", got.starved)
	}
	got := p.judge(now.Add(time.Second), others, "pods-self", nil, nil).starved
	if !strings.Contains(got, "0 of 4 slots") || !strings.Contains(got, "Lease pods-x (slot count 64, not 4)") || strings.Contains(got, "pods-garbage") {
		t.Errorf("got %q, want 0 of 4 slots naming pods-x (slot count 64) and not pods-garbage", got)
	}
	if got := p.judge(now.Add(2*time.Second), others, "pods-self", set(0), set(0)).starved; got != "" {
		t.Errorf("holding a slot: got starved %q", got)
	}
	if got := p.judge(now.Add(3*time.Second), others, "pods-self", nil, nil).starved; got != "" {
		t.Errorf("grace starts again: got starved %q", got)
	}
}

// Slots of two counts overlap where their hash ranges do.
func TestOverlapped(t *testing.T) {
	tests := []struct {
		slots       []int
		from, count int
		want        []int
	}{
		{[]int{0, 1, 2, 3}, 4, 4, []int{0, 1, 2, 3}},
		{[]int{0, 1, 63}, 64, 32, []int{0, 31}},
		{[]int{0, 63}, 64, 4, []int{0, 3}},
		{[]int{1}, 2, 8, []int{4, 5, 6, 7}},
		{[]int{0}, 1, 4, []int{0, 1, 2, 3}},
		{nil, 8, 4, nil},
	}
	for _, tt := range tests {
		if got := overlapped(tt.slots, tt.from, tt.count); !slices.Equal(got, tt.want) {
			t.Errorf("overlapped(%v, %d, %d) = %v, want %v", tt.slots, tt.from, tt.count, got, tt.want)
		}
	}
}

// A Lease not renewed is gone after its lease duration, at most ten of
// this replica's, whatever it says.
func TestViewForgetsALeaseThatIsNotRenewed(t *testing.T) {
	v := newView(2 * time.Second)
	now := time.Now()
	short, long := lease("pods-short", "4", "0"), lease("pods-long", "4", "1")
	short.Spec.LeaseDurationSeconds = ptr.To[int32](1)
	long.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
	v.replace([]coordinationv1.Lease{*short, *long, *lease("pods-self", "4", "")}, now)
	names := func(at time.Duration) []string {
		var out []string
		for _, l := range v.others(now.Add(at), "pods-self") {
			out = append(out, l.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		at   time.Duration
		want []string
	}{
		{0, []string{"pods-long", "pods-short"}},
		{time.Second, []string{"pods-long"}},
		{19 * time.Second, []string{"pods-long"}},
		{20 * time.Second, nil},
	} {
		if got := names(tt.at); !slices.Equal(got, tt.want) {
			t.Errorf("after %s: got %v, want %v", tt.at, got, tt.want)
		}
	}
}
