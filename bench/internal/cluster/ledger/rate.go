package ledger

import "time"

// Rates counts each replica's handlings (by when they ended) per bucket of
// width, from start to end: Rates(...)[i][b] is replicas[i]'s handlings
// that ended in [start+b·width, start+(b+1)·width). Handlings that never
// ended, or of other replicas, are not counted.
func Rates(hs []Handling, replicas []string, start, end int64, width time.Duration) [][]int {
	buckets := 0
	if end > start && width > 0 {
		buckets = int((end - start + int64(width) - 1) / int64(width))
	}
	index := map[string]int{}
	out := make([][]int, len(replicas))
	for i, r := range replicas {
		index[r] = i
		out[i] = make([]int, buckets)
	}
	for _, h := range hs {
		i, ok := index[h.Replica]
		if !ok || h.End < start || h.End >= end || h.End == 0 {
			continue
		}
		out[i][(h.End-start)/int64(width)]++
	}
	return out
}
