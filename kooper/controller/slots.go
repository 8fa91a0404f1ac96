package controller

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Slots of a sharded controller's hash space.
//
// The API server's shard selector (ListOptions.ShardSelector, KEP-5866)
// hashes an object's metadata.uid with 64-bit FNV-1a and matches ranges of
// that hash. A sharded controller cuts the hash space into a power of two of
// equal slots; slot i is [i·2⁶⁴/count, (i+1)·2⁶⁴/count).

// MaxSlots is the largest number of slots a sharded controller may have.
const MaxSlots = 256

// ValidSlotCount reports whether count slots can cut the hash space: a
// power of two from 1 to MaxSlots.
func ValidSlotCount(count int) bool {
	return count >= 1 && count <= MaxSlots && count&(count-1) == 0
}

// SlotOf returns the slot of count (a valid slot count) that uid hashes
// into, with the hash the API server's shard selector uses.
func SlotOf(uid types.UID, count int) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	shift := 64 - bits.TrailingZeros(uint(count))
	if shift == 64 {
		return 0
	}
	return int(h.Sum64() >> shift)
}

// SlotSelector returns the ListOptions.ShardSelector that selects the
// objects of the given slots of count: one shardRange per run of
// consecutive slots, ORed. No slots select everything (an empty selector).
func SlotSelector(slots []int, count int) string {
	if len(slots) == 0 {
		return ""
	}
	in := make([]bool, count)
	for _, s := range slots {
		if s >= 0 && s < count {
			in[s] = true
		}
	}
	var ranges []string
	for s := 0; s < count; {
		if !in[s] {
			s++
			continue
		}
		end := s
		for end < count && in[end] {
			end++
		}
		ranges = append(ranges, fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", slotBound(s, count), slotBound(end, count)))
		s = end
	}
	return strings.Join(ranges, " || ")
}

// slotBound is the hash at which slot s of count starts, as the selector
// writes it: 0x and 16 hex digits, or 0x10000000000000000 past the last.
func slotBound(s, count int) string {
	if s >= count {
		return "0x10000000000000000"
	}
	width := uint64(1) << (64 - bits.TrailingZeros(uint(count))) // 0 for one slot: s is 0
	return fmt.Sprintf("0x%016x", uint64(s)*width)
}
