package sharding

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// assign returns which slots each live member should own: the members
// (sorted, unique) share count slots, ⌊count/N⌋ each and one more for the
// first count mod N; each keeps the slots it claims, lowest first, up to
// its quota (a slot claimed by two is kept by the first); every other slot
// goes, in order, to the first member still under its quota. Every replica
// computes it from what it sees, so replicas that see the same members and
// claims agree, and a change of members moves as few slots as it can.
func assign(count int, members []string, claims map[string][]int) map[string][]int {
	out := make(map[string][]int, len(members))
	if len(members) == 0 {
		return out
	}
	base, extra := count/len(members), count%len(members)
	quota := func(i int) int {
		if i < extra {
			return base + 1
		}
		return base
	}
	taken := make([]bool, count)
	for i, m := range members {
		mine := slices.Clone(claims[m])
		slices.Sort(mine)
		for _, s := range mine {
			if len(out[m]) == quota(i) {
				break
			}
			if s >= 0 && s < count && !taken[s] {
				taken[s] = true
				out[m] = append(out[m], s)
			}
		}
	}
	next := 0
	for s := range count {
		if taken[s] {
			continue
		}
		for next < len(members) && len(out[members[next]]) >= quota(next) {
			next++
		}
		if next == len(members) {
			break // cannot happen: the quotas add up to count
		}
		out[members[next]] = append(out[members[next]], s)
	}
	for m := range out {
		slices.Sort(out[m])
	}
	return out
}

// formatSlots writes slots as the annotation holds them: sorted, runs
// collapsed, e.g. "0-3,7,9-10". No slots is "".
func formatSlots(slots []int) string {
	s := slices.Clone(slots)
	sort.Ints(s)
	s = slices.Compact(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(s[i]))
		} else {
			parts = append(parts, strconv.Itoa(s[i])+"-"+strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseSlots reads formatSlots' output; slots outside [0, count) and
// malformed parts are an error.
func parseSlots(v string, count int) ([]int, error) {
	var out []int
	if v == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, &slotsError{v}
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, &slotsError{v}
			}
		}
		if a < 0 || b < a || b >= count {
			return nil, &slotsError{v}
		}
		for s := a; s <= b; s++ {
			out = append(out, s)
		}
	}
	return out, nil
}

// slotsError is a slots annotation that cannot be read.
type slotsError struct{ value string }

func (e *slotsError) Error() string {
	return "invalid slots annotation " + strconv.Quote(e.value)
}
