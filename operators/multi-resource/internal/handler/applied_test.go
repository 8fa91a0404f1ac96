package handler

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestARepairIsCountedOnce(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	quota := childKey{"ResourceQuota", "tenant-acme", "quota"}
	first := appliedChild{uid: "q1", rv: "10", at: at}
	tests := []struct {
		name       string
		generation int64 // of the Tenant at the second apply; 0: 1
		now        appliedChild
		want       bool
	}{
		{"found in place: the same object at the same version", 0, first, false},
		{"deleted and made again: another UID", 0, appliedChild{uid: "q2", rv: "12", at: at.Add(time.Second)}, true},
		{"our fields changed and restored: a later version and apply time", 0, appliedChild{uid: "q1", rv: "12", at: at.Add(2 * time.Second)}, true},
		{"someone else's fields changed: a later version, our apply time kept", 0, appliedChild{uid: "q1", rv: "12", at: at}, false},
		{"a spec change: another generation", 2, appliedChild{uid: "q1", rv: "12", at: at.Add(time.Second)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a applied
			tn := &metav1.ObjectMeta{Name: "acme", UID: "acme-uid", Generation: 1}
			if a.repaired(tn, quota, first, nil) {
				t.Fatal("got a repair for the first apply, want none")
			}
			if tt.generation != 0 {
				tn.Generation = tt.generation
			}
			if got := a.repaired(tn, quota, tt.now, nil); got != tt.want {
				t.Errorf("got repaired %v, want %v", got, tt.want)
			}
			if a.repaired(tn, quota, tt.now, nil) {
				t.Error("got a repair when applying the same again, want none: a repair counts once")
			}
		})
	}
}

func TestDeletedTenantsAreForgotten(t *testing.T) {
	var a applied
	isLive := func(_ string, uid types.UID) bool {
		var i int
		_, _ = fmt.Sscanf(string(uid), "t%d", &i)
		return i >= 150 // the first 150 were deleted without a last handling
	}
	k := childKey{"Namespace", "", "tenant"}
	for i := range 200 {
		uid := types.UID(fmt.Sprintf("t%03d", i))
		a.repaired(&metav1.ObjectMeta{Name: string(uid), UID: uid}, k, appliedChild{uid: "ns"}, isLive)
	}
	if n := a.len(); n != 50 {
		t.Errorf("got %d Tenants remembered, want the 50 live ones", n)
	}
	for uid := range a.tenants {
		if !isLive("", uid) {
			t.Errorf("got deleted Tenant %s still remembered", uid)
		}
	}
	gone := &metav1.ObjectMeta{Name: "gone", UID: "gone"}
	a.repaired(gone, k, appliedChild{uid: "ns"}, nil)
	a.forget(gone.UID)
	if _, ok := a.tenants[gone.UID]; ok {
		t.Error("got a forgotten Tenant still remembered")
	}
}
