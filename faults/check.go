package faults

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Pause is a window in which a replica process was stopped (SIGSTOP).
type Pause struct {
	Replica  string
	From, To time.Time
}

// Overlap is two handlings of one key at once.
type Overlap struct {
	A, B Handling
}

func (o Overlap) String() string {
	return fmt.Sprintf("%s: %s [%s, %s] and %s [%s, %s]", o.A.Key,
		o.A.Replica, o.A.Begin.Format("15:04:05.000"), endOf(o.A), o.B.Replica, o.B.Begin.Format("15:04:05.000"), endOf(o.B))
}

func endOf(h Handling) string {
	if h.End.IsZero() {
		return "not ended"
	}
	return h.End.Format("15:04:05.000")
}

// Overlaps returns the pairs of handlings of one key that ran at once.
// A handling with no end ran until its replica died: deaths gives when
// each replica process ended (a running one's has the zero time: until
// now). Handlings that were frozen mid-flight by a pause, and ended
// within grace of the pause's end, are returned apart: the process could
// not have stopped them while it was stopped.
func Overlaps(hs []Handling, deaths map[string]time.Time, pauses []Pause, grace time.Duration) (overlaps, frozen []Overlap) {
	byKey := map[string][]Handling{}
	now := time.Now()
	for _, h := range hs {
		if h.End.IsZero() {
			h.End = now
			if d, ok := deaths[h.Replica]; ok && !d.IsZero() {
				h.End = d
			}
		}
		byKey[h.Key] = append(byKey[h.Key], h)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		list := byKey[k]
		sort.Slice(list, func(i, j int) bool { return list[i].Begin.Before(list[j].Begin) })
		for i := range list {
			for j := i + 1; j < len(list) && list[j].Begin.Before(list[i].End); j++ {
				o := Overlap{list[i], list[j]}
				if frozenBy(list[i], pauses, grace) || frozenBy(list[j], pauses, grace) {
					frozen = append(frozen, o)
				} else {
					overlaps = append(overlaps, o)
				}
			}
		}
	}
	return overlaps, frozen
}

// stopLag is how long a process may still run after SIGSTOP was sent.
const stopLag = 100 * time.Millisecond

// frozenBy reports whether h began before a pause of its replica (or as
// the SIGSTOP was on its way) and ended within grace after it.
func frozenBy(h Handling, pauses []Pause, grace time.Duration) bool {
	for _, p := range pauses {
		if p.Replica == h.Replica && h.Begin.Before(p.From.Add(stopLag)) && h.End.After(p.From) && !h.End.After(p.To.Add(grace)) {
			return true
		}
	}
	return false
}

// Woke returns the handlings that a replica process began within window
// after waking up from a pause longer than its Lease: it must check its
// Lease first, and by then a standby holds it.
func Woke(hs []Handling, pauses []Pause, lease time.Duration) []Handling {
	var out []Handling
	for _, p := range pauses {
		if p.To.Sub(p.From) <= lease {
			continue
		}
		for _, h := range hs {
			if h.Replica == p.Replica && !h.Begin.Before(p.To) && h.Begin.Before(p.To.Add(lease)) {
				out = append(out, h)
			}
		}
	}
	return out
}

// Unhandled returns the keys whose final resourceVersion (finals) no
// handling completed.
func Unhandled(hs []Handling, finals map[string]string) []string {
	done := map[string]bool{}
	for _, h := range hs {
		if h.OK && finals[h.Key] == h.RV {
			done[h.Key] = true
		}
	}
	var missing []string
	for k, rv := range finals {
		if !done[k] {
			missing = append(missing, k+"@"+rv)
		}
	}
	sort.Strings(missing)
	return missing
}

// Describe lists up to n overlaps.
func Describe(os []Overlap, n int) string {
	var b strings.Builder
	for i, o := range os {
		if i == n {
			fmt.Fprintf(&b, "\n  and %d more", len(os)-n)
			break
		}
		b.WriteString("\n  " + o.String())
	}
	return b.String()
}
