package ledger

import (
	"cmp"
	"fmt"
	"slices"
)

// Overlap is two handlings of one key at once: Second began before First
// ended.
type Overlap struct {
	First, Second Handling
}

// String describes o for error messages.
func (o Overlap) String() string {
	where := "across replicas"
	if o.First.Replica == o.Second.Replica {
		where = "in one replica"
	}
	return fmt.Sprintf("key %d handled twice at once %s, %.3f ms apart: %s; %s",
		o.First.Key, where, float64(o.Second.Start-o.First.Start)/1e6, o.First, o.Second)
}

// Overlaps returns, for every handling that began before an earlier
// handling of the same key had ended, that pair: none means no key was
// ever handled twice at once, by two replicas or by one. Every handling
// needs an End; give one that never ended (its replica was killed) the
// time its replica died.
func Overlaps(hs []Handling) []Overlap {
	sorted := slices.Clone(hs)
	slices.SortFunc(sorted, func(a, b Handling) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
	var out []Overlap
	for i := 0; i < len(sorted); {
		// One key: sweep its handlings in start order, against the one
		// that ends last so far.
		j, latest := i+1, sorted[i]
		for ; j < len(sorted) && sorted[j].Key == sorted[i].Key; j++ {
			h := sorted[j]
			if h.Start < latest.End {
				out = append(out, Overlap{First: latest, Second: h})
			}
			if h.End > latest.End {
				latest = h
			}
		}
		i = j
	}
	return out
}

// Lost returns, sorted, the keys of final (key → resourceVersion) that no
// handling handled at that resourceVersion.
func Lost(hs []Handling, final map[int]string) []int {
	handled := map[int]bool{}
	for _, h := range hs {
		if rv, ok := final[h.Key]; ok && rv == h.RV {
			handled[h.Key] = true
		}
	}
	var lost []int
	for key := range final {
		if !handled[key] {
			lost = append(lost, key)
		}
	}
	slices.Sort(lost)
	return lost
}

// LastFirst returns when the last key of final (key → resourceVersion) was
// first handled at that resourceVersion (the end of that handling), and
// false if some key never was.
func LastFirst(hs []Handling, final map[int]string) (int64, bool) {
	first := map[int]int64{}
	for _, h := range hs {
		if rv, ok := final[h.Key]; ok && rv == h.RV && h.End != 0 {
			if at, seen := first[h.Key]; !seen || h.End < at {
				first[h.Key] = h.End
			}
		}
	}
	if len(first) < len(final) {
		return 0, false
	}
	var last int64
	for _, at := range first {
		last = max(last, at)
	}
	return last, true
}
