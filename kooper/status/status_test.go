package status_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/kooper/status"
)

var (
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

func ready(s metav1.ConditionStatus, reason string, generation int64, at time.Time) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: s, Reason: reason, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(at)}
}

func TestSet(t *testing.T) {
	progressing := metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Rolling", LastTransitionTime: metav1.NewTime(t0)}
	tests := []struct {
		name        string
		conds       []metav1.Condition
		set         metav1.Condition
		wantChanged bool
		want        []metav1.Condition
	}{
		{
			name:        "a new condition is added at now",
			set:         ready(metav1.ConditionTrue, "Available", 1, time.Time{}),
			wantChanged: true,
			want:        []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t1)},
		},
		{
			name:        "a new condition ignores the transition time it carries",
			set:         ready(metav1.ConditionTrue, "Available", 1, t0.Add(-time.Hour)),
			wantChanged: true,
			want:        []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t1)},
		},
		{
			name:        "a status change moves the transition time to now",
			conds:       []metav1.Condition{ready(metav1.ConditionFalse, "Unavailable", 1, t0)},
			set:         ready(metav1.ConditionTrue, "Available", 1, time.Time{}),
			wantChanged: true,
			want:        []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t1)},
		},
		{
			name:        "a new reason with the same status keeps the transition time",
			conds:       []metav1.Condition{ready(metav1.ConditionFalse, "Unavailable", 1, t0)},
			set:         ready(metav1.ConditionFalse, "ImagePullBackOff", 1, time.Time{}),
			wantChanged: true,
			want:        []metav1.Condition{ready(metav1.ConditionFalse, "ImagePullBackOff", 1, t0)},
		},
		{
			name:        "a new observed generation with the same status keeps the transition time",
			conds:       []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t0)},
			set:         ready(metav1.ConditionTrue, "Available", 2, time.Time{}),
			wantChanged: true,
			want:        []metav1.Condition{ready(metav1.ConditionTrue, "Available", 2, t0)},
		},
		{
			name:        "the same condition changes nothing",
			conds:       []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t0)},
			set:         ready(metav1.ConditionTrue, "Available", 1, time.Time{}),
			wantChanged: false,
			want:        []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t0)},
		},
		{
			name:        "other conditions are kept",
			conds:       []metav1.Condition{progressing},
			set:         ready(metav1.ConditionUnknown, "Starting", 1, time.Time{}),
			wantChanged: true,
			want:        []metav1.Condition{progressing, ready(metav1.ConditionUnknown, "Starting", 1, t1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := tt.conds
			if got := status.Set(&conds, tt.set, t1); got != tt.wantChanged {
				t.Errorf("got changed %v, want %v", got, tt.wantChanged)
			}
			if !reflect.DeepEqual(conds, tt.want) {
				t.Errorf("got conditions %+v, want %+v", conds, tt.want)
			}
		})
	}
}

func TestSetNil(t *testing.T) {
	if got := status.Set(nil, ready(metav1.ConditionTrue, "Available", 1, t0), t1); got {
		t.Errorf("got changed %v, want false", got)
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name        string
		conds       []metav1.Condition
		wantRemoved bool
		wantLen     int
	}{
		{name: "a present condition is removed", conds: []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t0)}, wantRemoved: true, wantLen: 0},
		{name: "a missing condition removes nothing", conds: []metav1.Condition{{Type: "Progressing"}}, wantRemoved: false, wantLen: 1},
		{name: "an empty list removes nothing", wantRemoved: false, wantLen: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := tt.conds
			if got := status.Remove(&conds, "Ready"); got != tt.wantRemoved {
				t.Errorf("got removed %v, want %v", got, tt.wantRemoved)
			}
			if len(conds) != tt.wantLen {
				t.Errorf("got %d conditions, want %d", len(conds), tt.wantLen)
			}
		})
	}
}

func TestGetReturnsACopy(t *testing.T) {
	conds := []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t0)}
	c, ok := status.Get(conds, "Ready")
	if !ok {
		t.Fatalf("got ok %v, want true", ok)
	}
	c.Reason = "Changed"
	if got := conds[0].Reason; got != "Available" {
		t.Errorf("got reason %q after changing the copy, want %q", got, "Available")
	}
	if _, ok := status.Get(conds, "Progressing"); ok {
		t.Errorf("got ok %v for a missing condition, want false", ok)
	}
}

func TestPredicates(t *testing.T) {
	tests := []struct {
		name        string
		conds       []metav1.Condition
		generation  int64
		wantTrue    bool
		wantFalse   bool
		wantTrueFor bool
	}{
		{name: "a missing condition is neither true nor false", generation: 1},
		{name: "an unknown condition is neither true nor false", conds: []metav1.Condition{ready(metav1.ConditionUnknown, "Starting", 1, t0)}, generation: 1},
		{name: "a true condition of the current generation is true for it", conds: []metav1.Condition{ready(metav1.ConditionTrue, "Available", 2, t0)}, generation: 2, wantTrue: true, wantTrueFor: true},
		{name: "a true condition of an older generation is not true for the current one", conds: []metav1.Condition{ready(metav1.ConditionTrue, "Available", 1, t0)}, generation: 2, wantTrue: true},
		{name: "a false condition is false", conds: []metav1.Condition{ready(metav1.ConditionFalse, "Unavailable", 2, t0)}, generation: 2, wantFalse: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.IsTrue(tt.conds, "Ready"); got != tt.wantTrue {
				t.Errorf("got IsTrue %v, want %v", got, tt.wantTrue)
			}
			if got := status.IsFalse(tt.conds, "Ready"); got != tt.wantFalse {
				t.Errorf("got IsFalse %v, want %v", got, tt.wantFalse)
			}
			if got := status.IsTrueFor(tt.conds, "Ready", tt.generation); got != tt.wantTrueFor {
				t.Errorf("got IsTrueFor %v, want %v", got, tt.wantTrueFor)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	a := []metav1.Condition{ready(metav1.ConditionTrue, "Reconciled", 1, now)}
	tests := []struct {
		name string
		b    []metav1.Condition
		want bool
	}{
		{"the same", []metav1.Condition{ready(metav1.ConditionTrue, "Reconciled", 1, now)}, true},
		{"another transition time only", []metav1.Condition{ready(metav1.ConditionTrue, "Reconciled", 1, now.Add(time.Hour))}, true},
		{"another status", []metav1.Condition{ready(metav1.ConditionFalse, "Reconciled", 1, now)}, false},
		{"another reason", []metav1.Condition{ready(metav1.ConditionTrue, "Failed", 1, now)}, false},
		{"another generation", []metav1.Condition{ready(metav1.ConditionTrue, "Reconciled", 2, now)}, false},
		{"one more", append([]metav1.Condition{ready(metav1.ConditionTrue, "Reconciled", 1, now)}, metav1.Condition{Type: "Invalid"}), false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.Equal(a, tt.b); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
