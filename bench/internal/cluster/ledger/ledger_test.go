package ledger_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kooperkit/kooper/bench/internal/cluster/ledger"
)

func TestATailReadsWhatTheWriterWroteAndKeepsUnendedHandlingsOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.handlings")
	tail := ledger.NewTail(path, "a")
	if hs, err := tail.Read(); err != nil || len(hs) != 0 {
		t.Fatalf("got %v, %v before the file exists, want nothing and no error", hs, err)
	}
	w, err := ledger.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	s1 := w.Begin(7, "100")
	s2 := w.Begin(8, "101")
	w.End(7, "100", s1)
	hs, err := tail.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Replica != "a" || hs[0].Key != 7 || hs[0].RV != "100" || hs[0].Start != s1 || hs[0].End < s1 {
		t.Errorf("got %+v, want key 7 at 100 from %d, ended", hs, s1)
	}
	if open := tail.Open(); len(open) != 1 || open[0].Key != 8 || open[0].Start != s2 || open[0].End != 0 {
		t.Errorf("got open %+v, want key 8 begun at %d and not ended", open, s2)
	}
	w.End(8, "101", s2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if hs, err = tail.Read(); err != nil || len(hs) != 1 || hs[0].Key != 8 {
		t.Errorf("got %+v, %v on the second read, want only key 8", hs, err)
	}
	if open := tail.Open(); len(open) != 0 {
		t.Errorf("got open %+v after every handling ended, want none", open)
	}
}

func TestATailKeepsALineStillBeingWrittenForTheNextRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.handlings")
	if err := os.WriteFile(path, []byte("b 1 5 10\ne 1 5 10 2"), 0o644); err != nil {
		t.Fatal(err)
	}
	tail := ledger.NewTail(path, "b")
	if hs, err := tail.Read(); err != nil || len(hs) != 0 {
		t.Fatalf("got %+v, %v with the end line incomplete, want nothing yet", hs, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("0\n"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	hs, err := tail.Read()
	if err != nil || len(hs) != 1 || hs[0].End != 20 {
		t.Errorf("got %+v, %v, want key 1 ended at 20", hs, err)
	}
}

func TestATailRejectsALineItCannotParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.handlings")
	if err := os.WriteFile(path, []byte("e 1 5 10 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.NewTail(path, "c").Read(); err == nil {
		t.Error("got no error for a handling that ends before it starts, want one")
	}
}

func h(replica string, key int, rv string, start, end int64) ledger.Handling {
	return ledger.Handling{Replica: replica, Key: key, RV: rv, Start: start, End: end}
}

func TestOverlapsFindsEveryHandlingThatBeganBeforeAnEarlierOneEnded(t *testing.T) {
	for _, c := range []struct {
		name string
		hs   []ledger.Handling
		want [][2]string // replicas of First, Second
	}{
		{"one after the other is no overlap", []ledger.Handling{h("a", 1, "5", 10, 20), h("b", 1, "6", 20, 30)}, nil},
		{"other keys at once are no overlap", []ledger.Handling{h("a", 1, "5", 10, 20), h("b", 2, "5", 10, 20)}, nil},
		{"two replicas at once overlap", []ledger.Handling{h("b", 1, "6", 15, 30), h("a", 1, "5", 10, 20)}, [][2]string{{"a", "b"}}},
		{"one replica twice at once overlaps", []ledger.Handling{h("a", 1, "5", 10, 20), h("a", 1, "5", 19, 25)}, [][2]string{{"a", "a"}}},
		{"a short one inside a long one, then another", []ledger.Handling{h("a", 1, "5", 10, 100), h("b", 1, "5", 20, 30), h("c", 1, "5", 50, 60)}, [][2]string{{"a", "b"}, {"a", "c"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [][2]string
			for _, o := range ledger.Overlaps(c.hs) {
				got = append(got, [2]string{o.First.Replica, o.Second.Replica})
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got overlaps %v, want %v", got, c.want)
			}
		})
	}
}

func TestLostListsTheKeysWhoseFinalVersionNobodyHandled(t *testing.T) {
	hs := []ledger.Handling{h("a", 1, "5", 10, 20), h("b", 2, "6", 10, 20), h("b", 3, "6", 10, 25), h("a", 3, "7", 30, 40)}
	final := map[int]string{1: "5", 2: "9", 3: "7", 4: "1"}
	if got := ledger.Lost(hs, final); !slices.Equal(got, []int{2, 4}) {
		t.Errorf("got lost %v, want [2 4]", got)
	}
	if _, ok := ledger.LastFirst(hs, final); ok {
		t.Error("got every final version handled, want not")
	}
	if at, ok := ledger.LastFirst(hs, map[int]string{1: "5", 3: "7"}); !ok || at != 40 {
		t.Errorf("got the last final version handled at %d (%t), want 40", at, ok)
	}
}

func TestSharesCountEachReplicasKeysAtTheWantedVersion(t *testing.T) {
	hs := []ledger.Handling{
		h("a", 1, "5", 1, 2), h("a", 1, "5", 3, 4), // twice: counts once
		h("a", 2, "4", 1, 2), // an older version: not counted
		h("b", 2, "6", 1, 2), h("b", 3, "6", 1, 2),
		h("c", 3, "6", 5, 6), // handled by two: counts for both
	}
	got, missing := ledger.Shares(hs, map[int]string{1: "5", 2: "6", 3: "6", 4: "6"})
	if got["a"] != 1 || got["b"] != 2 || got["c"] != 1 || missing != 1 {
		t.Errorf("got shares %v and %d missing, want a 1, b 2, c 1 and 1 missing", got, missing)
	}
	if d := ledger.Distinct(hs); d["a"] != 2 || d["b"] != 2 || d["c"] != 1 {
		t.Errorf("got distinct keys %v, want a 2, b 2, c 1", d)
	}
}

func TestFairAcceptsASharesWithinTheToleranceOfAnEvenSplit(t *testing.T) {
	for _, c := range []struct {
		share float64
		n     int
		want  bool
	}{
		{1.0 / 3, 3, true}, {0.30, 3, true}, {0.366, 3, true}, {0.29, 3, false}, {0.37, 3, false}, {0.5, 2, true}, {1, 1, true},
	} {
		if got := ledger.Fair(c.share, c.n, 0.1); got != c.want {
			t.Errorf("Fair(%.3f, %d, 0.1): got %t, want %t", c.share, c.n, got, c.want)
		}
	}
}

func TestCoverageSaysWhenEveryKeyWasFirstHandled(t *testing.T) {
	c := ledger.NewCoverage(3)
	c.Add([]ledger.Handling{h("a", 0, "1", 30, 31), h("b", 1, "1", 10, 11), h("a", 9, "1", 5, 6)})
	if c.Complete() || c.Covered() != 2 {
		t.Fatalf("got %d covered (complete %t), want 2 of 3", c.Covered(), c.Complete())
	}
	c.Add([]ledger.Handling{h("b", 2, "1", 20, 21), h("b", 0, "2", 15, 16)})
	if !c.Complete() || c.Last() != 20 {
		t.Errorf("got complete %t, last first handling %d, want complete at 20 (key 0 first at 15)", c.Complete(), c.Last())
	}
}

func TestBalancedWantsEverySlotOwnedOnceAndEachReplicaAtItsQuota(t *testing.T) {
	live := []string{"a", "b", "c"}
	for _, c := range []struct {
		name  string
		owned map[string][]int
		want  bool
	}{
		{"3, 3 and 2 of 8", map[string][]int{"a": {0, 1, 2}, "b": {3, 4, 5}, "c": {6, 7}}, true},
		{"a slot nobody owns", map[string][]int{"a": {0, 1, 2}, "b": {3, 4, 5}, "c": {6}}, false},
		{"a slot owned twice", map[string][]int{"a": {0, 1, 2}, "b": {2, 4, 5}, "c": {6, 7}}, false},
		{"one over its quota", map[string][]int{"a": {0, 1, 2, 3}, "b": {4, 5}, "c": {6, 7}}, false},
		{"a replica gone is not counted", map[string][]int{"a": {0, 1, 2}, "b": {3, 4, 5}, "c": {6, 7}, "d": {7}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ledger.Balanced(c.owned, live, 8); got != c.want {
				t.Errorf("got %t, want %t", got, c.want)
			}
		})
	}
}

func TestSettledAtIsWhenTheSlotsBecameBalancedForGood(t *testing.T) {
	reports := []ledger.SlotReport{
		{Replica: "a", At: 0, Slots: []int{0, 1, 2, 3}},
		{Replica: "b", At: 50, Slots: nil}, // joins at 100 (the change)
		{Replica: "a", At: 120, Slots: []int{0, 1}},
		{Replica: "b", At: 130, Slots: []int{2, 3}},    // balanced
		{Replica: "b", At: 150, Slots: nil},            // suspended
		{Replica: "b", At: 170, Slots: []int{2, 3}},    // balanced again, for good
		{Replica: "a", At: 300, Slots: []int{0, 1, 2}}, // after until: ignored
	}
	live := []string{"a", "b"}
	if at, ok := ledger.SettledAt(reports, live, 4, 100, 200); !ok || at != 170 {
		t.Errorf("got settled at %d (%t), want 170", at, ok)
	}
	if at, ok := ledger.SettledAt(reports, live, 4, 180, 200); !ok || at != 180 {
		t.Errorf("got settled at %d (%t) when already balanced at the start, want 180", at, ok)
	}
	if _, ok := ledger.SettledAt(reports, live, 4, 100, 140+5); !ok {
		t.Error("got not settled by 145, want balanced since 130")
	}
	if _, ok := ledger.SettledAt(reports, live, 4, 100, 160); ok {
		t.Error("got settled by 160 (b suspended at 150), want not")
	}
}

func TestTakenOverIsWhenTheLastSlotOfAGoneReplicaWasHandledElsewhere(t *testing.T) {
	slotOf := func(key int) int { return key % 4 }
	hs := []ledger.Handling{
		h("a", 2, "1", 90, 91), // before the kill
		h("k", 2, "1", 95, 96), // the killed replica itself
		h("b", 2, "1", 110, 111),
		h("b", 6, "1", 105, 106), // slot 2 first at 105
		h("c", 3, "1", 140, 141),
	}
	if at, ok := ledger.TakenOver(hs, slotOf, []int{2, 3}, "k", 100); !ok || at != 140 {
		t.Errorf("got taken over at %d (%t), want 140", at, ok)
	}
	if _, ok := ledger.TakenOver(hs, slotOf, []int{1, 2}, "k", 100); ok {
		t.Error("got slot 1 taken over, want not (nobody handled it)")
	}
}

func TestRatesCountHandlingsPerReplicaAndBucket(t *testing.T) {
	hs := []ledger.Handling{h("a", 1, "1", 0, 5), h("a", 2, "1", 0, 15), h("b", 1, "1", 0, 19), h("b", 1, "1", 0, 20), h("x", 1, "1", 0, 1), h("a", 3, "1", 0, 0)}
	got := ledger.Rates(hs, []string{"a", "b"}, 0, 20, 10)
	if !slices.Equal(got[0], []int{1, 1}) || !slices.Equal(got[1], []int{0, 1}) {
		t.Errorf("got %v, want a [1 1] and b [0 1] (the end is excluded)", got)
	}
}

func TestAcquiredCountsTheSlotsTakenWithinThePeriod(t *testing.T) {
	reports := []ledger.SlotReport{
		{Replica: "a", At: 0, Slots: []int{0, 1, 2, 3}},
		{Replica: "a", At: 110, Slots: []int{0, 1}},
		{Replica: "b", At: 120, Slots: []int{2, 3}}, // 2 acquired
		{Replica: "b", At: 130, Slots: nil},
		{Replica: "b", At: 140, Slots: []int{2, 3}}, // 2 taken back
		{Replica: "a", At: 50, Slots: []int{0, 1, 2, 3}},
		{Replica: "a", At: 210, Slots: []int{0, 1, 2, 3}}, // after until
	}
	if got := ledger.Acquired(reports, 100, 200); len(got) != 1 || got["b"] != 4 {
		t.Errorf("got slots acquired %v, want b 4 (2 moved to b, then taken back after a lapse)", got)
	}
	if got := ledger.Acquired(reports, 0, 100); len(got) != 1 || got["a"] != 4 {
		t.Errorf("got slots acquired %v from the start, want a 4 (its first slots)", got)
	}
}
