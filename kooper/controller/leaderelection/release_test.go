package leaderelection

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

// A leader whose renewals failed while another replica took the Lease
// over must not release that replica's Lease when it stops: client-go
// releases on the record it observed before (its own), after reading the
// new one only for its resourceVersion.
func TestAStaleLeaderDoesNotReleaseAnotherHoldersLease(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name, holder string
		released     bool
	}{
		{"held by another replica", "b", false},
		{"held by this one", "a", true},
	} {
		now := metav1.NewMicroTime(time.Now())
		client := fake.NewClientset(&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(tt.holder), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &now, AcquireTime: &now},
		})
		lock := &observedLock{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "l"},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "a"},
		}}
		// What client-go's tryRelease does: read, then write an empty record.
		if _, _, err := lock.Get(ctx); err != nil {
			t.Fatal(err)
		}
		err := lock.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1})
		got, gerr := client.CoordinationV1().Leases("ns").Get(ctx, "l", metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		holder := ptr.Deref(got.Spec.HolderIdentity, "")
		switch {
		case tt.released && (err != nil || holder != ""):
			t.Errorf("%s: release: %v, holder %q; want released", tt.name, err, holder)
		case !tt.released && (!errors.Is(err, errNotHolder) || holder != tt.holder):
			t.Errorf("%s: release: %v, holder %q; want refused and %s still holding", tt.name, err, holder, tt.holder)
		}
	}
}
