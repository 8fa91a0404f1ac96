package v1alpha1_test

import (
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

// conversion is a pair of conversion functions: the lossless ones, or a
// deliberately lossy variant the round trips must catch.
type conversion struct {
	to   func(*chaosv1alpha1.PodTerminator, *chaosv1beta1.PodTerminator)
	from func(*chaosv1alpha1.PodTerminator, *chaosv1beta1.PodTerminator)
}

var lossless = conversion{
	to:   func(alpha *chaosv1alpha1.PodTerminator, beta *chaosv1beta1.PodTerminator) { alpha.ConvertTo(beta) },
	from: func(alpha *chaosv1alpha1.PodTerminator, beta *chaosv1beta1.PodTerminator) { alpha.ConvertFrom(beta) },
}

// region: roundtrips

// roundTrips converts n random objects of each version to the other and
// back, and returns how many came back different, with the first
// difference.
func roundTrips(t *testing.T, seed int64, n int, c conversion) (lost int, first string) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{chaosv1alpha1.AddToScheme, chaosv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), serializer.NewCodecFactory(scheme)).NilChance(.3).NumElements(0, 3)
	diff := func(a, b any) {
		if !equality.Semantic.DeepEqual(a, b) {
			lost++
			if first == "" {
				first = cmp.Diff(a, b)
			}
		}
	}
	for range n {
		var alpha, alphaBack chaosv1alpha1.PodTerminator
		var beta chaosv1beta1.PodTerminator
		f.Fill(&alpha)
		c.to(&alpha, &beta)
		c.from(&alphaBack, &beta)
		diff(&alpha, &alphaBack)

		var newer, newerBack chaosv1beta1.PodTerminator
		var between chaosv1alpha1.PodTerminator
		f.Fill(&newer)
		c.from(&between, &newer)
		c.to(&between, &newerBack)
		diff(&newer, &newerBack)
	}
	return lost, first
}

// endregion: roundtrips

// Old to new to old and new to old to new give back the object, over 1,000
// random objects of each version; and a conversion that loses anything is
// caught.
func TestConversionRoundTrips(t *testing.T) {
	const n = 1000
	tests := []struct {
		name     string
		c        conversion
		wantLoss bool
	}{
		// region: lossy
		{"the conversion", lossless, false},
		{"a conversion that forgets maxPods", conversion{
			to: lossless.to,
			from: func(alpha *chaosv1alpha1.PodTerminator, beta *chaosv1beta1.PodTerminator) {
				n := beta.DeepCopy()
				n.Spec.Termination.MaxPods = nil
				alpha.ConvertFrom(n)
			},
		}, true},
		// endregion: lossy
		{"a conversion that rounds the period to seconds", conversion{
			to: lossless.to,
			from: func(alpha *chaosv1alpha1.PodTerminator, beta *chaosv1beta1.PodTerminator) {
				n := beta.DeepCopy()
				if n.Spec.Period != nil {
					n.Spec.Period.Duration = n.Spec.Period.Truncate(time.Second)
				}
				alpha.ConvertFrom(n)
			},
		}, true},
		{"a conversion that drops the status", conversion{
			to: func(alpha *chaosv1alpha1.PodTerminator, beta *chaosv1beta1.PodTerminator) {
				o := alpha.DeepCopy()
				o.Status = chaosv1alpha1.PodTerminatorStatus{}
				o.ConvertTo(beta)
			},
			from: lossless.from,
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := time.Now().UnixNano()
			lost, first := roundTrips(t, seed, n, tt.c)
			switch {
			case tt.wantLoss && lost == 0:
				t.Errorf("seed %d: all %d objects of each version came back unchanged, want the loss caught", seed, n)
			case !tt.wantLoss && lost > 0:
				t.Errorf("seed %d: %d of %d objects came back different; the first (-sent +got):\n%s", seed, lost, 2*n, first)
			}
			t.Logf("seed %d: %d of %d objects came back different", seed, lost, 2*n)
		})
	}
}

// What v1alpha1 cannot hold survives a trip through it, in an annotation.
func TestWhatTheOldVersionCannotHoldSurvivesIt(t *testing.T) {
	sent := &chaosv1beta1.PodTerminator{
		TypeMeta:   metav1.TypeMeta{APIVersion: "chaos.kooperkit.io/v1beta1", Kind: "PodTerminator"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"team": "web"}},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Period:      &metav1.Duration{Duration: 1500 * time.Millisecond},
			Termination: chaosv1beta1.Termination{Percent: 20, MaxPods: ptr.To[int32](3), Method: chaosv1beta1.TerminationMethodDelete},
		},
	}
	var old chaosv1alpha1.PodTerminator
	old.ConvertFrom(sent)
	if old.APIVersion != "chaos.kooperkit.io/v1alpha1" || *old.Spec.PeriodSeconds != 1 || old.Spec.TerminationPercent != 20 || old.Spec.TerminationMethod != chaosv1alpha1.TerminationMethodDelete {
		t.Errorf("got %s spec %+v, want v1alpha1, periodSeconds 1 (1.5s toward zero), the percent and the method", old.APIVersion, old.Spec)
	}
	if got, want := old.Annotations[chaosv1beta1.PreservedAnnotation], `{"period":"1.5s","maxPods":3}`; got != want {
		t.Errorf("got annotation %q, want %q", got, want)
	}

	t.Run("back to v1beta1 unchanged", func(t *testing.T) {
		var back chaosv1beta1.PodTerminator
		old.ConvertTo(&back)
		if d := cmp.Diff(sent, &back); d != "" {
			t.Errorf("came back different (-sent +got):\n%s", d)
		}
	})
	t.Run("a period changed through v1alpha1 wins over the kept one", func(t *testing.T) {
		changed := old.DeepCopy()
		changed.Spec.PeriodSeconds = ptr.To[int32](30)
		var back chaosv1beta1.PodTerminator
		changed.ConvertTo(&back)
		if back.Spec.Period.Duration != 30*time.Second || *back.Spec.Termination.MaxPods != 3 {
			t.Errorf("got period %s, maxPods %d, want 30s and the kept 3", back.Spec.Period.Duration, *back.Spec.Termination.MaxPods)
		}
		if _, ok := back.Annotations[chaosv1beta1.PreservedAnnotation]; ok {
			t.Errorf("got annotations %v, want the preserved one removed", back.Annotations)
		}
	})
	t.Run("an annotation that is not ours to read is dropped, the conversion goes on", func(t *testing.T) {
		bad := old.DeepCopy()
		bad.Annotations[chaosv1beta1.PreservedAnnotation] = "{not json"
		var back chaosv1beta1.PodTerminator
		bad.ConvertTo(&back)
		if back.Spec.Termination.MaxPods != nil || back.Spec.Period.Duration != time.Second || back.Annotations["team"] != "web" {
			t.Errorf("got spec %+v, annotations %v, want what v1alpha1 holds and the other annotations", back.Spec, back.Annotations)
		}
	})
}
