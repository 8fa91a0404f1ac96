package track_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
	"github.com/kooperkit/kooper/bench/internal/cluster/track"
)

func pod(i int, token string, sent time.Time) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: pods.Name(i), Annotations: map[string]string{
		pods.TokenAnnotation: token, pods.SentAnnotation: pods.SentTime(sent),
	}}
}

func TestTrackerClosesOnceEveryPodIsSeenThenEveryChurnedOne(t *testing.T) {
	tr := track.New(3, 2, "run-1")
	if !tr.FirstSeenAt().IsZero() || !tr.AllSeenAt().IsZero() {
		t.Fatal("got a first or last handling time before any handling")
	}
	for i := range 3 {
		tr.Handle(pod(i, pods.SeedToken, time.Unix(0, 0)))
		tr.Handle(pod(i, pods.SeedToken, time.Unix(0, 0))) // seen twice counts once
	}
	tr.Handle(&metav1.ObjectMeta{Name: "not-ours"})
	select {
	case <-tr.AllSeen():
	default:
		t.Fatalf("got %d seen, want all 3 (AllSeen closed)", tr.Seen())
	}
	if first, last := tr.FirstSeenAt(), tr.AllSeenAt(); first.IsZero() || last.Before(first) {
		t.Errorf("got first handling at %v and last at %v, want first set and not after last", first, last)
	}
	select {
	case <-tr.AllChurned():
		t.Fatal("got AllChurned closed before any churn")
	default:
	}
	sent := time.Now().Add(-5 * time.Millisecond)
	tr.Handle(pod(0, "run-1", sent))
	tr.Handle(pod(1, "run-1", sent))
	tr.Handle(pod(2, "run-1", sent)) // beyond u: not a churned pod
	<-tr.AllChurned()
	ls := tr.Latencies()
	if len(ls) != 2 || ls[0] < 5*time.Millisecond {
		t.Errorf("got latencies %v, want 2 of at least 5ms", ls)
	}
	if got := tr.Calls(); got != 10 {
		t.Errorf("got %d calls, want 10", got)
	}
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	ls := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}} {
		if got := track.Percentile(ls, c.p); got != c.want {
			t.Errorf("got p%v = %v, want %v", c.p*100, got, c.want)
		}
	}
	if got := track.Percentile(nil, 0.5); got != 0 {
		t.Errorf("got %v for no latencies, want 0", got)
	}
}

func TestHandleDoesNotAllocate(t *testing.T) {
	tr := track.New(10, 10, "run-1")
	p := pod(3, "run-1", time.Now())
	if n := testing.AllocsPerRun(100, func() { tr.Handle(p) }); n != 0 {
		t.Errorf("got %v allocations per Handle, want 0", n)
	}
}
