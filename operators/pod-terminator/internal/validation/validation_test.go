package validation_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

var rules = validation.Rules{
	Namespace: "kooper-pod-terminator",
	PodLabels: map[string]string{"app.kubernetes.io/name": "pod-terminator"},
}

// valid returns a spec every check accepts, changed by edit.
func valid(edit func(*chaosv1beta1.PodTerminatorSpec)) *chaosv1beta1.PodTerminatorSpec {
	s := &chaosv1beta1.PodTerminatorSpec{
		Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
		Namespaces:  []string{"shop"},
		Period:      &metav1.Duration{Duration: time.Minute},
		Termination: chaosv1beta1.Termination{Percent: 30, MinimumInstances: ptr.To[int32](1)},
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name         string
		spec         *chaosv1beta1.PodTerminatorSpec
		wantErr      []string // substrings of the error; nil: valid
		wantWarnings []string // substrings, one per warning
	}{
		{name: "a plain spec is valid", spec: valid(nil)},
		{name: "every namespace is allowed", spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = nil })},
		{
			name: "an In expression is a positive selector",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}},
					{Key: "canary", Operator: metav1.LabelSelectorOpDoesNotExist},
				}}
			}),
		},
		{
			name:    "an empty selector",
			spec:    valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Selector = metav1.LabelSelector{} }),
			wantErr: []string{"spec.selector must not be empty"},
		},
		{
			name: "a selector by exclusion only",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}},
				}}
			}),
			wantErr: []string{`spec.selector "app notin (db)" matches by exclusion only`},
		},
		{
			name: "a malformed label value",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Selector.MatchLabels = map[string]string{"app": "no spaces"}
			}),
			wantErr: []string{"spec.selector is not a valid label selector"},
		},
		{
			name: "a selector matching the operator's own pods",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Selector.MatchLabels = map[string]string{"app.kubernetes.io/name": "pod-terminator"}
				s.Namespaces = nil
			}),
			wantErr: []string{"matches the pod-terminator's own pods"},
		},
		{
			name:    "kube-system",
			spec:    valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = []string{"shop", "kube-system"} }),
			wantErr: []string{`spec.namespaces: "kube-system" is protected: the pod-terminator never terminates pods in kooper-pod-terminator, kube-node-lease, kube-public, kube-system`},
		},
		{
			name:    "the operator's namespace",
			spec:    valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = []string{"kooper-pod-terminator"} }),
			wantErr: []string{`"kooper-pod-terminator" is protected`},
		},
		{
			name:    "a namespace that cannot exist",
			spec:    valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = []string{"Shop_1"} }),
			wantErr: []string{`spec.namespaces: "Shop_1" is not a namespace name`},
		},
		{
			name: "every schema rule at once, listed together",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Termination.Percent = 150
				s.Termination.MaxPods = ptr.To[int32](0)
				s.Period = &metav1.Duration{Duration: 500 * time.Millisecond}
				s.Termination.MinimumInstances = ptr.To[int32](-1)
			}),
			wantErr: []string{
				"spec.termination.percent must be between 1 and 100, got 150",
				"spec.termination.maxPods must be 1 or more, got 0",
				"spec.period must be 1s or more, got 500ms",
				"spec.termination.minimumInstances must be 0 or more, got -1",
			},
		},
		{
			name: "defaults not applied",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Period, s.Termination.MinimumInstances = nil, nil
			}),
			wantErr: []string{"spec.period is unset", "spec.termination.minimumInstances is unset", "manifests/crds"},
		},
		{
			name:         "a high percent without dry run warns",
			spec:         valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 80 }),
			wantWarnings: []string{"termination.percent 80 without dryRun or maxPods"},
		},
		{
			name: "a high percent with maxPods does not warn",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Termination.Percent, s.Termination.MaxPods = 80, ptr.To[int32](1)
			}),
		},
		{
			name:         "no survivors without dry run warns",
			spec:         valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.MinimumInstances = ptr.To[int32](0) }),
			wantWarnings: []string{"termination.minimumInstances 0 without dryRun"},
		},
		{
			name: "a dry run does not warn",
			spec: valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Termination.Percent, s.Termination.MinimumInstances, s.DryRun = 100, ptr.To[int32](0), true
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := validation.Validate(tt.spec, rules)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("got error %v, want nil", err)
			case tt.wantErr != nil && err == nil:
				t.Fatalf("got no error, want one saying %q", tt.wantErr)
			case err != nil:
				if !errors.Is(err, validation.ErrInvalid) {
					t.Errorf("got error %v, want it to wrap ErrInvalid", err)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("got error %q, want it to say %q", err, want)
					}
				}
			}
			if len(warnings) != len(tt.wantWarnings) {
				t.Fatalf("got warnings %q, want %d like %q", warnings, len(tt.wantWarnings), tt.wantWarnings)
			}
			for i, want := range tt.wantWarnings {
				if !strings.Contains(warnings[i], want) {
					t.Errorf("got warning %q, want it to say %q", warnings[i], want)
				}
			}
		})
	}
}

func TestProtectedAlwaysHoldsTheSystemNamespaces(t *testing.T) {
	got := validation.Rules{}.Protected()
	if strings.Join(got, ",") != "kube-node-lease,kube-public,kube-system" {
		t.Errorf("got %q, want the three system namespaces", got)
	}
}

func TestProtectedAddsTheOperatorsAndTheRunnersNamespaces(t *testing.T) {
	r := validation.Rules{Namespace: "kooper-pod-terminator", ProtectedNamespaces: []string{"payments", "kube-system", "", "kooper-pod-terminator"}}
	got := strings.Join(r.Protected(), ",")
	if want := "kooper-pod-terminator,kube-node-lease,kube-public,kube-system,payments"; got != want {
		t.Errorf("got %q, want %q (sorted, once each)", got, want)
	}
}

func TestANamespaceProtectedByTheRunnerIsRefused(t *testing.T) {
	r := rules
	r.ProtectedNamespaces = []string{"payments"}
	_, err := validation.Validate(valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = []string{"shop", "payments"} }), r)
	if want := `spec.namespaces: "payments" is protected: the pod-terminator never terminates pods in kooper-pod-terminator, kube-node-lease, kube-public, kube-system, payments`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got error %v, want one saying %q", err, want)
	}
	if _, err := validation.Validate(valid(nil), r); err != nil {
		t.Errorf("got error %v for namespace shop, want nil", err)
	}
}

func TestMoreNamespacesThanTheSchemaAllowsAreRefused(t *testing.T) {
	spec := valid(func(s *chaosv1beta1.PodTerminatorSpec) {
		s.Namespaces = make([]string, validation.MaxNamespaces+1)
		for i := range s.Namespaces {
			s.Namespaces[i] = "shop-" + strconv.Itoa(i)
		}
	})
	_, err := validation.Validate(spec, rules)
	if want := "spec.namespaces has 65 entries, at most 64"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got error %v, want one saying %q", err, want)
	}
}

// manyBadNamespaces returns a spec whose namespaces are n entries, every one
// a problem: alternately not a namespace name and protected.
func manyBadNamespaces(n int) *chaosv1beta1.PodTerminatorSpec {
	return valid(func(s *chaosv1beta1.PodTerminatorSpec) {
		s.Namespaces = make([]string, n)
		for i := range s.Namespaces {
			s.Namespaces[i] = "Not_A_Namespace_" + strings.Repeat("x", 200)
			if i%2 == 1 {
				s.Namespaces[i] = "kube-system"
			}
		}
	})
}

// A huge list of bad namespaces (a 0.9 MB object once made a 28.8 MB answer)
// gets a message of a few kilobytes, built with about as many allocations as
// for a list just past the caps.
func TestTheErrorStaysSmallWhateverTheObjectsSize(t *testing.T) {
	const n = 100_000
	big, small := manyBadNamespaces(n), manyBadNamespaces(validation.MaxNamespaces+1)

	_, err := validation.Validate(big, rules)
	if err == nil {
		t.Fatal("got no error, want one")
	}
	msg := err.Error()
	if len(msg) > 8<<10 {
		t.Errorf("got a message of %d bytes for %d bad namespaces, want at most 8 KiB", len(msg), n)
	}
	// The count problem, then MaxProblems-1 entries described; the other
	// entries counted.
	if want := fmt.Sprintf("; and %d more problems", n+1-validation.MaxProblems); !strings.HasSuffix(msg, want) {
		t.Errorf("got message ending %q, want it to end %q", msg[max(0, len(msg)-80):], want)
	}
	if got := strings.Count(msg, "spec.namespaces: "); got != validation.MaxProblems-1 {
		t.Errorf("got %d namespace entries described, want %d", got, validation.MaxProblems-1)
	}

	allocs := func(spec *chaosv1beta1.PodTerminatorSpec) float64 {
		return testing.AllocsPerRun(5, func() { _, _ = validation.Validate(spec, rules) })
	}
	// Allocation counts wobble a little between runs (the race detector,
	// the runtime): compare with generous room. One allocation per bad
	// entry, the bug this guards against, is 100,000.
	bigAllocs, smallAllocs := allocs(big), allocs(small)
	if bigAllocs > 2*smallAllocs {
		t.Errorf("got %.0f allocations for %d bad namespaces, want at most twice the %.0f for %d", bigAllocs, n, smallAllocs, validation.MaxNamespaces+1)
	}
	if bigAllocs > 200 {
		t.Errorf("got %.0f allocations for %d bad namespaces, want a bounded number (at most 200)", bigAllocs, n)
	}
}

func BenchmarkValidateManyBadNamespaces(b *testing.B) {
	for _, n := range []int{10, 1_000, 100_000} {
		spec := manyBadNamespaces(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = validation.Validate(spec, rules)
			}
		})
	}
}
