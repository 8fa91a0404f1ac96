package pods_test

import (
	"testing"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
)

func TestIndexParsesWhatNameMakes(t *testing.T) {
	for _, i := range []int{0, 7, 9999, 123456} {
		got, ok := pods.Index(pods.Name(i))
		if !ok || got != i {
			t.Errorf("got Index(Name(%d)) = %d, %v, want %d, true", i, got, ok, i)
		}
	}
	for _, name := range []string{"", "other", "checkout-api-7d4b9c8f6d-", "checkout-api-7d4b9c8f6d-12x"} {
		if _, ok := pods.Index(name); ok {
			t.Errorf("got Index(%q) ok, want not a benchmark pod", name)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = pods.Index("checkout-api-7d4b9c8f6d-004242") }); n != 0 {
		t.Errorf("got %v allocations per Index, want 0", n)
	}
}

func TestSentTimeHasAFixedWidthAndParses(t *testing.T) {
	for _, tm := range []time.Time{time.Unix(0, 0), time.Unix(1_800_000_000, 123)} {
		s := pods.SentTime(tm)
		if len(s) != 19 {
			t.Errorf("got %q (%d digits), want 19", s, len(s))
		}
		if ns, ok := pods.ParseSent(s); !ok || ns != tm.UnixNano() {
			t.Errorf("got ParseSent(%q) = %d, %v, want %d, true", s, ns, ok, tm.UnixNano())
		}
	}
}
