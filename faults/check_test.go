package faults

import (
	"testing"
	"time"
)

func TestOverlaps(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	h := func(key, replica string, from, to int) Handling {
		out := Handling{Key: key, Replica: replica, Begin: at(from), OK: true}
		if to >= 0 {
			out.End = at(to)
		}
		return out
	}
	for _, tt := range []struct {
		name            string
		hs              []Handling
		deaths          map[string]time.Time
		pauses          []Pause
		overlap, frozen int
	}{
		{"one after the other", []Handling{h("a", "r1", 0, 10), h("a", "r2", 10, 20)}, nil, nil, 0, 0},
		{"other keys at once", []Handling{h("a", "r1", 0, 10), h("b", "r2", 5, 20)}, nil, nil, 0, 0},
		{"one key at once", []Handling{h("a", "r1", 0, 10), h("a", "r2", 5, 20)}, nil, nil, 1, 0},
		{"unended until the replica died", []Handling{h("a", "r1", 0, -1), h("a", "r2", 50, 60)},
			map[string]time.Time{"r1": at(100)}, nil, 1, 0},
		{"unended, replica died before", []Handling{h("a", "r1", 0, -1), h("a", "r2", 50, 60)},
			map[string]time.Time{"r1": at(40)}, nil, 0, 0},
		{"frozen by a pause, ended at the wake-up", []Handling{h("a", "r1", 0, 5100), h("a", "r2", 3000, 3050)}, nil,
			[]Pause{{Replica: "r1", From: at(10), To: at(5000)}}, 0, 1},
		{"begun as the SIGSTOP was on its way", []Handling{h("a", "r1", 40, 5100), h("a", "r2", 3000, 3050)}, nil,
			[]Pause{{Replica: "r1", From: at(10), To: at(5000)}}, 0, 1},
		{"ended long after the wake-up", []Handling{h("a", "r1", 0, 9000), h("a", "r2", 3000, 3050)}, nil,
			[]Pause{{Replica: "r1", From: at(10), To: at(5000)}}, 1, 0},
	} {
		o, f := Overlaps(tt.hs, tt.deaths, tt.pauses, time.Second)
		if len(o) != tt.overlap || len(f) != tt.frozen {
			t.Errorf("%s: %d overlaps, %d frozen; want %d, %d", tt.name, len(o), len(f), tt.overlap, tt.frozen)
		}
	}
}

func TestWokeAndUnhandled(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	pauses := []Pause{{Replica: "r1", From: at(10), To: at(20)}}
	hs := []Handling{
		{Key: "a", RV: "1", Replica: "r1", Begin: at(5), End: at(6), OK: true},
		{Key: "b", RV: "2", Replica: "r1", Begin: at(21), End: at(22), OK: true}, // after waking
		{Key: "c", RV: "3", Replica: "r2", Begin: at(21), End: at(22), OK: false},
	}
	if w := Woke(hs, pauses, 5*time.Second); len(w) != 1 || w[0].Key != "b" {
		t.Errorf("Woke = %v, want b", w)
	}
	got := Unhandled(hs, map[string]string{"a": "1", "b": "9", "c": "3"})
	if len(got) != 2 || got[0] != "b@9" || got[1] != "c@3" {
		t.Errorf("Unhandled = %v, want b@9 (older version handled) and c@3 (failed)", got)
	}
}
