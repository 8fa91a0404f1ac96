package sharding

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

// maxSlots is the largest number of slots a sharded controller may have.
const maxSlots = 256

// validSlotCount reports whether count slots can cut the hash space: a
// power of two from 1 to maxSlots.
func validSlotCount(count int) bool {
	return count >= 1 && count <= maxSlots && count&(count-1) == 0
}

// SlotOf returns the slot of count (Config.Slots: a power of two up to
// 256) that uid hashes into, with the hash the API server's shard selector
// uses. An object with this UID is handled by the replica whose Runner
// holds that slot (Runner.Slots).
func SlotOf(uid types.UID, count int) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	shift := 64 - bits.TrailingZeros(uint(count))
	if shift == 64 {
		return 0
	}
	return int(h.Sum64() >> shift)
}

// noSlot is the ListOptions.ShardSelector of a replica that holds no slot:
// the hash 0 alone, which no object is expected to have (and whose object
// the slot gate would drop anyway). The API server refuses an empty range.
const noSlot = "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')"

// slotSelector returns the ListOptions.ShardSelector that selects the
// objects of the given slots of count: one shardRange per run of
// consecutive slots, ORed; noSlot for no slot.
func slotSelector(slots []int, count int) string {
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
	if len(ranges) == 0 {
		return noSlot
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
