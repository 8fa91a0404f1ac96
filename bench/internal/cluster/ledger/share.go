package ledger

import "math"

// Shares counts, for each replica, the keys of want (key →
// resourceVersion) it handled at that resourceVersion, and how many keys
// of want no replica handled so. A key two replicas handled at that
// version counts for both.
func Shares(hs []Handling, want map[int]string) (byReplica map[string]int, missing int) {
	type handledBy struct {
		replica string
		key     int
	}
	seen := map[handledBy]bool{}
	keys := map[int]bool{}
	byReplica = map[string]int{}
	for _, h := range hs {
		rv, ok := want[h.Key]
		if !ok || rv != h.RV || seen[handledBy{h.Replica, h.Key}] {
			continue
		}
		seen[handledBy{h.Replica, h.Key}] = true
		keys[h.Key] = true
		byReplica[h.Replica]++
	}
	return byReplica, len(want) - len(keys)
}

// Distinct counts the distinct keys each replica handled, at any version.
func Distinct(hs []Handling) map[string]int {
	type handledBy struct {
		replica string
		key     int
	}
	seen := map[handledBy]bool{}
	out := map[string]int{}
	for _, h := range hs {
		if !seen[handledBy{h.Replica, h.Key}] {
			seen[handledBy{h.Replica, h.Key}] = true
			out[h.Replica]++
		}
	}
	return out
}

// Fair reports whether share (of 1) is within tolerance (relative, 0.1
// for ± 10 %) of an even split over n replicas.
func Fair(share float64, n int, tolerance float64) bool {
	even := 1 / float64(n)
	return math.Abs(share-even) <= tolerance*even+1e-9
}

// Coverage is when each of the keys 0 to n-1 was first handled, by any
// replica.
type Coverage struct {
	first   []int64
	covered int
}

// NewCoverage returns the Coverage of keys 0 to n-1, none handled yet.
func NewCoverage(n int) *Coverage { return &Coverage{first: make([]int64, n)} }

// Add takes handlings into account; keys out of range are ignored.
func (c *Coverage) Add(hs []Handling) {
	for _, h := range hs {
		if h.Key < 0 || h.Key >= len(c.first) {
			continue
		}
		if c.first[h.Key] == 0 {
			c.covered++
		}
		if c.first[h.Key] == 0 || h.Start < c.first[h.Key] {
			c.first[h.Key] = h.Start
		}
	}
}

// Covered is how many keys were handled.
func (c *Coverage) Covered() int { return c.covered }

// Complete reports whether every key was handled.
func (c *Coverage) Complete() bool { return c.covered == len(c.first) }

// Last returns the latest of the keys' first handlings (their starts): when
// every key had been handled once, if Complete.
func (c *Coverage) Last() int64 {
	var last int64
	for _, at := range c.first {
		last = max(last, at)
	}
	return last
}
