package sharding

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

func TestAssign(t *testing.T) {
	tests := []struct {
		name    string
		count   int
		members []string
		claims  map[string][]int
		want    map[string][]int
	}{
		{name: "alone", count: 4, members: []string{"a"}, want: map[string][]int{"a": {0, 1, 2, 3}}},
		{name: "nobody", count: 4, want: map[string][]int{}},
		{name: "two from scratch", count: 4, members: []string{"a", "b"}, want: map[string][]int{"a": {0, 1}, "b": {2, 3}}},
		{name: "uneven: the first gets one more", count: 8, members: []string{"a", "b", "c"}, want: map[string][]int{"a": {0, 1, 2}, "b": {3, 4, 5}, "c": {6, 7}}},
		{
			name: "a joiner takes only the surplus", count: 8, members: []string{"a", "b", "c"},
			claims: map[string][]int{"a": {0, 1, 2, 3}, "b": {4, 5, 6, 7}},
			want:   map[string][]int{"a": {0, 1, 2}, "b": {4, 5, 6}, "c": {3, 7}},
		},
		{
			name: "a leaver's slots are spread", count: 8, members: []string{"a", "c"},
			claims: map[string][]int{"a": {0, 1, 2}, "c": {6, 7}},
			want:   map[string][]int{"a": {0, 1, 2, 3}, "c": {4, 5, 6, 7}},
		},
		{
			name: "a slot claimed twice is kept by the first", count: 4, members: []string{"a", "b"},
			claims: map[string][]int{"a": {1}, "b": {1, 2}},
			want:   map[string][]int{"a": {0, 1}, "b": {2, 3}},
		},
		{
			name: "claims out of range are ignored", count: 2, members: []string{"a"},
			claims: map[string][]int{"a": {-1, 7}},
			want:   map[string][]int{"a": {0, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := assign(tt.count, tt.members, tt.claims)
			if !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Whatever the claims, the assignment covers every slot once and gives
// each member its quota; members and claims that are the same give the same
// assignment.
func TestAssignCoversEverySlotOnce(t *testing.T) {
	for _, count := range []int{1, 2, 32, 256} {
		for n := 1; n <= 7; n++ {
			var members []string
			claims := map[string][]int{}
			for i := range n {
				m := fmt.Sprintf("m%d", i)
				members = append(members, m)
				for s := i; s < count; s += n + 1 { // overlapping, uneven claims
					claims[m] = append(claims[m], s)
				}
			}
			got := assign(count, members, claims)
			seen := make([]int, count)
			for i, m := range members {
				want := count / n
				if i < count%n {
					want++
				}
				if len(got[m]) != want {
					t.Errorf("%d slots, %d members: %s got %d slots, want %d", count, n, m, len(got[m]), want)
				}
				for _, s := range got[m] {
					seen[s]++
				}
			}
			for s, k := range seen {
				if k != 1 {
					t.Errorf("%d slots, %d members: slot %d assigned %d times", count, n, s, k)
				}
			}
			if again := assign(count, members, claims); !maps.EqualFunc(got, again, slices.Equal) {
				t.Errorf("not deterministic")
			}
		}
	}
}

func TestSlotsAnnotation(t *testing.T) {
	tests := []struct {
		slots []int
		text  string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{7, 0, 1, 2, 3, 9, 10}, "0-3,7,9-10"},
	}
	for _, tt := range tests {
		if got := formatSlots(tt.slots); got != tt.text {
			t.Errorf("formatSlots(%v) = %q, want %q", tt.slots, got, tt.text)
		}
		back, err := parseSlots(tt.text, 16)
		if err != nil || !slices.Equal(back, slices.Sorted(slices.Values(tt.slots))) {
			t.Errorf("parseSlots(%q) = %v, %v", tt.text, back, err)
		}
	}
	for _, bad := range []string{"x", "1-", "3-1", "16", "-1", "1,,2"} {
		if _, err := parseSlots(bad, 16); err == nil {
			t.Errorf("parseSlots(%q) accepted", bad)
		}
	}
}
