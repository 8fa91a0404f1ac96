package ledger

import (
	"cmp"
	"slices"
)

// SlotReport is a replica's slots (sharding.Runner.Slots) from At (Unix
// nanoseconds) on, until its next report.
type SlotReport struct {
	Replica string `json:"replica"`
	At      int64  `json:"at"`
	Slots   []int  `json:"slots"`
}

// Balanced reports whether the live replicas own the count slots between
// them as the sharding Runners aim to: every slot owned once, each replica
// its quota (count/len(live), rounded down or up).
func Balanced(owned map[string][]int, live []string, count int) bool {
	if len(live) == 0 {
		return false
	}
	low := count / len(live)
	high := low
	if count%len(live) != 0 {
		high++
	}
	seen := make([]bool, count)
	total := 0
	for _, r := range live {
		slots := owned[r]
		if len(slots) < low || len(slots) > high {
			return false
		}
		for _, s := range slots {
			if s < 0 || s >= count || seen[s] {
				return false
			}
			seen[s] = true
			total++
		}
	}
	return total == count
}

// SettledAt returns when the live replicas' slots became balanced for
// good within [from, until): the time from which, going by reports, they
// stayed balanced until until (from itself if they were balanced at from
// and never stopped being so), and false if they were not balanced at
// until. A replica's slots at from are those of its last report before.
func SettledAt(reports []SlotReport, live []string, count int, from, until int64) (int64, bool) {
	sorted := slices.Clone(reports)
	slices.SortStableFunc(sorted, func(a, b SlotReport) int { return cmp.Compare(a.At, b.At) })
	owned := map[string][]int{}
	i := 0
	for ; i < len(sorted) && sorted[i].At <= from; i++ {
		owned[sorted[i].Replica] = sorted[i].Slots
	}
	since := int64(-1)
	if Balanced(owned, live, count) {
		since = from
	}
	for ; i < len(sorted) && sorted[i].At < until; i++ {
		owned[sorted[i].Replica] = sorted[i].Slots
		switch ok := Balanced(owned, live, count); {
		case ok && since < 0:
			since = sorted[i].At
		case !ok:
			since = -1
		}
	}
	return since, since >= 0
}

// TakenOver returns when each of slots had been handled by a replica other
// than gone from from on: the latest of the slots' first such handlings
// (their starts), and false if some slot never was. slotOf maps a key to
// its slot.
func TakenOver(hs []Handling, slotOf func(key int) int, slots []int, gone string, from int64) (int64, bool) {
	first := map[int]int64{}
	for _, s := range slots {
		first[s] = 0
	}
	for _, h := range hs {
		if h.Replica == gone || h.Start < from {
			continue
		}
		s := slotOf(h.Key)
		if at, ok := first[s]; ok && (at == 0 || h.Start < at) {
			first[s] = h.Start
		}
	}
	var last int64
	for _, at := range first {
		if at == 0 {
			return 0, false
		}
		last = max(last, at)
	}
	return last, len(slots) > 0
}

// Acquired counts the slots each replica acquired within [from, until),
// going by reports: each slot in a report that was not in the same
// replica's report before. A slot given up and taken back counts again.
func Acquired(reports []SlotReport, from, until int64) map[string]int {
	sorted := slices.Clone(reports)
	slices.SortStableFunc(sorted, func(a, b SlotReport) int { return cmp.Compare(a.At, b.At) })
	owned := map[string]map[int]bool{}
	by := map[string]int{}
	for _, r := range sorted {
		if r.At >= until {
			break
		}
		now := map[int]bool{}
		for _, s := range r.Slots {
			now[s] = true
			if r.At >= from && !owned[r.Replica][s] {
				by[r.Replica]++
			}
		}
		owned[r.Replica] = now
	}
	return by
}
