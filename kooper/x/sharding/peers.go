package sharding

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Any Lease of the group may have been written by someone other than a
// replica. peers decides, step after step, what each live Lease other
// than this replica's changes here; doc.go ("Leases not written by a
// replica") says what and why.

// standing is how a Lease is read.
type standing int

const (
	// peer: readable, with this replica's slot count.
	peer standing = iota
	// foreign: readable, with another slot count.
	foreign
	// unreadable: a slot count or claims that a Runner never writes.
	unreadable
)

// other is a live Lease of the group other than this replica's, as read.
type other struct {
	name     string
	uid      string
	standing standing
	count    int    // its slot count, when readable
	raw      string // its claims annotation, as written
	rawCount string // its slot count annotation, as written
	// claims are the slots of this replica's count its claims overlap,
	// sorted: the same slots with one count, whole slots with more, the
	// slots a claimed one spans with fewer (counts are powers of two).
	claims []int
}

// readLeases reads the Leases for a replica with count slots.
func readLeases(leases []*coordinationv1.Lease, count int) []other {
	out := make([]other, 0, len(leases))
	for _, l := range leases {
		o := other{name: l.Name, uid: string(l.UID), raw: l.Annotations[AnnotationSlots], rawCount: l.Annotations[AnnotationSlotCount]}
		c, err := strconv.Atoi(o.rawCount)
		var slots []int
		if err == nil && validSlotCount(c) {
			slots, err = parseSlots(o.raw, c)
		}
		if err != nil || !validSlotCount(c) {
			o.standing = unreadable
			out = append(out, o)
			continue
		}
		o.count, o.claims = c, overlapped(slots, c, count)
		if c != count {
			o.standing = foreign
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b other) int { return strings.Compare(a.name, b.name) })
	return out
}

// overlapped returns the slots of count that the slots of from overlap,
// sorted. Slot i of n is [i·2⁶⁴/n, (i+1)·2⁶⁴/n); with powers of two, a
// slot of one count lies within one slot of a smaller count.
func overlapped(slots []int, from, count int) []int {
	var out []int
	for _, s := range slots {
		if from >= count {
			out = append(out, s/(from/count))
			continue
		}
		k := count / from
		for i := range k {
			out = append(out, s*k+i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// claimed returns, for each slot, the readable Leases that claim it.
func claimed(others []other) map[int][]string {
	out := map[int][]string{}
	for _, o := range others {
		if o.standing == unreadable {
			continue
		}
		for _, s := range o.claims {
			out[s] = append(out[s], o.name)
		}
	}
	return out
}

// peers is what this replica remembers of the other Leases between steps.
// Touched by Run's loop only.
type peers struct {
	count int
	// grace is how long a Lease may claim a slot this replica holds, or
	// leave its share unclaimed, before it is reported (and, for its
	// share, no longer counted): a replica that runs does either only
	// until its next check of the group. RenewDeadline.
	grace time.Duration

	contested map[string]time.Time // Lease → since when it claims a slot this replica holds
	idle      map[string]idleness  // member → since when it leaves free slots of its share unclaimed
	reported  map[string]bool      // findings logged, by Lease UID and finding
	// starvedSince is when this replica last began to hold no slot while
	// it should hold some; zero while it holds one.
	starvedSince time.Time
}

// idleness is a member that leaves free slots of its share unclaimed,
// since when, and its claims then. Once excluded, it stays so until its
// claims change.
type idleness struct {
	since    time.Time
	raw      string
	excluded bool
}

func newPeers(count int, grace time.Duration) *peers {
	return &peers{count: count, grace: grace,
		contested: map[string]time.Time{}, idle: map[string]idleness{}, reported: map[string]bool{}}
}

// finding is something to log once about a Lease.
type finding struct {
	msg string
	kv  []any
}

// judgement is what one step does with the other Leases.
type judgement struct {
	want    map[int]bool     // the slots this replica should own
	claimed map[int][]string // slot → the other readable Leases claiming it
	news    []finding        // to log, each once
	starved string           // why this replica holds no slot while it should, after grace; "" if not
}

// judge decides from the other live Leases (readLeases) which slots this
// replica, self, should own; claims are its claims and verified the slots
// it holds.
func (p *peers) judge(now time.Time, others []other, self string, claims, verified map[int]bool) judgement {
	j := judgement{claimed: claimed(others)}
	present, presentUID := map[string]bool{}, map[string]bool{}
	members := []string{self}
	claimsOf := map[string][]int{self: slices.Collect(maps.Keys(claims))}
	for _, o := range others {
		present[o.name], presentUID[o.uid] = true, true
		switch o.standing {
		case unreadable:
			p.report(&j, o, "unreadable", "ignoring a Lease of the group whose annotations no replica writes",
				"slotCount", clip(o.rawCount), "slots", clip(o.raw))
			continue
		case foreign:
			p.report(&j, o, "foreign", "a Lease of the group has another slot count: it is not counted as a replica, its slot count changes nothing here, and the slots it claims are neither taken nor given up while it is live",
				"slotCount", o.count, "slots", clip(o.raw), "ownSlotCount", p.count)
		}
		if contests := slices.ContainsFunc(o.claims, func(s int) bool { return verified[s] }); contests {
			since, ok := p.contested[o.name]
			if !ok {
				since, p.contested[o.name] = now, now
			}
			if o.standing == peer && now.Sub(since) >= p.grace {
				p.report(&j, o, "contests", "a Lease of the group keeps claiming slots this replica holds: they are kept, and the Lease is not counted as a replica",
					"slots", clip(o.raw), "held", formatSlots(slices.Collect(maps.Keys(verified))))
			}
			continue // a replica claims a held slot only until its next check
		}
		delete(p.contested, o.name)
		if o.standing != peer {
			continue
		}
		if i, ok := p.idle[o.name]; ok && i.excluded {
			if i.raw == o.raw {
				continue
			}
			delete(p.idle, o.name) // it claims again
		}
		members = append(members, o.name)
		claimsOf[o.name] = o.claims
	}
	slices.Sort(members)
	share := assign(p.count, members, claimsOf)
	j.want = map[int]bool{}
	for _, s := range share[self] {
		j.want[s] = true
	}

	// A member that leaves slots of its share free (nobody claims them)
	// for longer than grace is not counted from the next step.
	for _, o := range others {
		if _, member := claimsOf[o.name]; !member || o.name == self {
			continue
		}
		free := slices.DeleteFunc(slices.Clone(share[o.name]), func(s int) bool { return len(j.claimed[s]) > 0 || claims[s] })
		if len(free) == 0 {
			delete(p.idle, o.name)
			continue
		}
		i, ok := p.idle[o.name]
		if !ok || i.raw != o.raw {
			p.idle[o.name] = idleness{since: now, raw: o.raw}
			continue
		}
		if now.Sub(i.since) >= p.grace {
			i.excluded = true
			p.idle[o.name] = i
			p.report(&j, o, "idle", "a Lease of the group leaves its share of the slots unclaimed: it is not counted as a replica until its claims change",
				"slots", clip(o.raw), "unclaimed", formatSlots(free))
		}
	}

	// Readiness: no slot held while some should be, for longer than grace.
	if len(verified) > 0 || len(j.want) == 0 {
		p.starvedSince = time.Time{}
	} else {
		if p.starvedSince.IsZero() {
			p.starvedSince = now
		}
		if waited := now.Sub(p.starvedSince); waited >= p.grace {
			j.starved = fmt.Sprintf("sharding: 0 of %d slots for %s, while this replica should own %d: %s",
				p.count, waited.Round(time.Second), len(j.want), p.blockers(others, j))
		}
	}

	for name := range p.contested {
		if !present[name] {
			delete(p.contested, name)
		}
	}
	for name := range p.idle {
		if !present[name] {
			delete(p.idle, name)
		}
	}
	for key := range p.reported {
		if id, _, _ := strings.Cut(key, "/"); !presentUID[id] && !present[id] {
			delete(p.reported, key)
		}
	}
	return j
}

// report adds a finding about o, unless it was reported already.
func (p *peers) report(j *judgement, o other, what, msg string, kv ...any) {
	key := o.uid + "/" + what
	if o.uid == "" {
		key = o.name + "/" + what
	}
	if p.reported[key] {
		return
	}
	p.reported[key] = true
	j.news = append(j.news, finding{msg: msg, kv: append([]any{"other", o.name}, kv...)})
}

// blockers says who holds the slots this replica should own.
func (p *peers) blockers(others []other, j judgement) string {
	by := map[string]bool{}
	for s := range j.want {
		for _, name := range j.claimed[s] {
			by[name] = true
		}
	}
	if len(by) == 0 {
		return "they are not claimed by any other Lease, and this replica could not take them yet"
	}
	var parts []string
	for _, o := range others {
		if !by[o.name] {
			continue
		}
		part := "Lease " + o.name
		if o.standing == foreign {
			part += fmt.Sprintf(" (slot count %d, not %d)", o.count, p.count)
		}
		parts = append(parts, part)
	}
	const most = 5
	if len(parts) > most {
		parts = append(parts[:most], fmt.Sprintf("and %d more", len(parts)-most))
	}
	why := "they are claimed by " + strings.Join(parts, ", ")
	for s := range j.want {
		if len(j.claimed[s]) > 1 {
			return why + "; some by two Leases at once, which replicas never keep doing"
		}
	}
	return why
}

// clip shortens a value anyone may have written, for a log line.
func clip(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	return s[:most] + "..."
}
