package webhook_test

import (
	"cmp"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

// The security review's confused deputy: bob, who may update PodTerminators
// but delete no pod, turned an admin's dry run into a real one. An update
// making a PodTerminator more destructive needs its writer's own right to
// delete the pods it targets, as a create does.
func TestAnUpdateMakingAPodTerminatorMoreDestructiveNeedsTheRightToDeleteItsPods(t *testing.T) {
	// The admin's dry run, in team-b.
	dryRun := func(edit func(*chaosv1beta1.PodTerminator)) *chaosv1beta1.PodTerminator {
		return terminator(func(pt *chaosv1beta1.PodTerminator) {
			pt.Spec.Namespaces = []string{"team-b"}
			pt.Spec.DryRun = true
			pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodEviction
			if edit != nil {
				edit(pt)
			}
		})
	}
	tests := []struct {
		name    string
		old     *chaosv1beta1.PodTerminator // default dryRun(nil)
		edit    func(*chaosv1beta1.PodTerminator)
		targets string // the targets the refusal names; default "team-b"
		changes string // the changes it names
	}{
		{
			name: "the review's: dryRun off, 100%, minimumInstances 0, Delete",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.DryRun = false
				pt.Spec.Termination.Percent = 100
				pt.Spec.Termination.MinimumInstances = ptr.To[int32](0)
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodDelete
			},
			changes: "spec.dryRun turned off, spec.termination.percent raised, spec.termination.minimumInstances lowered, spec.termination.method changed to Delete",
		},
		{name: "dryRun turned off", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.DryRun = false }, changes: "spec.dryRun turned off"},
		{name: "a higher percentage", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Percent++ }, changes: "spec.termination.percent raised"},
		{name: "a lower minimum", edit: func(pt *chaosv1beta1.PodTerminator) { *pt.Spec.Termination.MinimumInstances-- }, changes: "spec.termination.minimumInstances lowered"},
		{name: "a shorter period", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Period.Duration -= time.Second }, changes: "spec.period shortened"},
		{
			name:    "a higher cap on pods",
			old:     dryRun(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MaxPods = ptr.To[int32](2) }),
			edit:    func(pt *chaosv1beta1.PodTerminator) { *pt.Spec.Termination.MaxPods = 3 },
			changes: "spec.termination.maxPods raised or removed",
		},
		{
			name:    "the cap on pods removed",
			old:     dryRun(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MaxPods = ptr.To[int32](2) }),
			edit:    func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MaxPods = nil },
			changes: "spec.termination.maxPods raised or removed",
		},
		{
			name: "Delete instead of Eviction",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodDelete
			},
			changes: "spec.termination.method changed to Delete",
		},
		{
			name: "Delete instead of no method (written before the field existed: Eviction)",
			old:  dryRun(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Method = "" }),
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodDelete
			},
			changes: "spec.termination.method changed to Delete",
		},
		{
			name: "Eviction instead of a method the operator does not know (and so does not act on)",
			old:  dryRun(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Method = "Kill" }),
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodEviction
			},
			changes: "spec.termination.method changed to Eviction",
		},
		{
			name: "another selector",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Selector.MatchLabels = map[string]string{"app": "database"}
			},
			changes: "spec.selector changed",
		},
		{
			name: "a narrower selector, checked too: proving it narrower is not worth the risk",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}
			},
			changes: "spec.selector changed",
		},
		{
			name:    "one more namespace",
			edit:    func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = []string{"team-b", "team-c"} },
			targets: `"team-b", "team-c"`,
			changes: "spec.namespaces changed",
		},
		{
			name:    "every namespace",
			edit:    func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = nil },
			targets: "every namespace (spec.namespaces is empty)",
			changes: "spec.namespaces changed",
		},
		{
			name:    "one namespace less, checked too: any change of the namespaces is",
			old:     dryRun(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = []string{"team-b", "team-c"} }),
			edit:    func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = []string{"team-b"} },
			changes: "spec.namespaces changed",
		},
		{
			name: "more destructive and less at once",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Termination.Percent++
				*pt.Spec.Termination.MinimumInstances++
			},
			changes: "spec.termination.percent raised",
		},
		{
			name:    "a valid spec instead of an invalid one, which terminates nothing",
			old:     dryRun(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MinimumInstances = nil }),
			edit:    func(pt *chaosv1beta1.PodTerminator) { *pt.Spec.Termination.MinimumInstances = 2 },
			changes: "the old spec is invalid, so terminates nothing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := tt.old
			if old == nil {
				old = dryRun(nil)
			}
			obj := old.DeepCopy()
			if obj.Spec.Termination.MinimumInstances == nil {
				obj.Spec.Termination.MinimumInstances = ptr.To[int32](1) // the schema's default
			}
			if tt.edit != nil {
				tt.edit(obj)
			}
			want := fmt.Sprintf(`user "bob" may not delete pods in every namespace this PodTerminator targets: %s; a PodTerminator deletes pods in your name, so making one more destructive (%s) needs that permission`,
				cmp.Or(tt.targets, `"team-b"`), tt.changes)
			for _, user := range []string{"bob", "admin"} {
				a := &access{}
				resp := review(t, newWebhook(t, a), request(t, admissionv1.Update, user, old, obj))
				switch {
				case user == "admin" && !resp.Allowed:
					t.Errorf("the admin, who may delete pods everywhere: got refused (%+v), want allowed", resp.Result)
				case user == "bob" && (resp.Allowed || resp.Result == nil || resp.Result.Message != want):
					t.Errorf("bob, who may delete no pod: got allowed %v, result %+v; want refused with %q", resp.Allowed, resp.Result, want)
				}
				if a.asked == 0 {
					t.Errorf("%s: got access never asked, want asked", user)
				}
			}
		})
	}
}

// An update that makes a PodTerminator no more destructive, or leaves its
// spec alone (the operator's finalizer, labels), is allowed without asking
// anything: the operator deletes no more than the old spec's writer was
// allowed to.
func TestAnUpdateMakingAPodTerminatorNoMoreDestructiveIsNotChecked(t *testing.T) {
	// Someone's PodTerminator at full strength, in team-b.
	old := terminator(func(pt *chaosv1beta1.PodTerminator) {
		pt.Spec.Namespaces = []string{"team-b"}
		pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodDelete
	})
	const operator = "system:serviceaccount:kooper-pod-terminator:pod-terminator"
	tests := []struct {
		name string
		user string // default bob, who may delete no pod
		old  *chaosv1beta1.PodTerminator
		edit func(*chaosv1beta1.PodTerminator)
	}{
		{name: "dryRun turned on", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.DryRun = true }},
		{name: "a lower percentage", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Percent-- }},
		{name: "a higher minimum", edit: func(pt *chaosv1beta1.PodTerminator) { *pt.Spec.Termination.MinimumInstances++ }},
		{name: "a longer period", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Period.Duration += time.Second }},
		{name: "a cap on pods set", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MaxPods = ptr.To[int32](1) }},
		{
			name: "a lower cap on pods",
			old:  terminator(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MaxPods = ptr.To[int32](3) }),
			edit: func(pt *chaosv1beta1.PodTerminator) { *pt.Spec.Termination.MaxPods = 2 },
		},
		{
			name: "Eviction instead of Delete",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodEviction
			},
		},
		{
			name: "all of these at once",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.DryRun = true
				pt.Spec.Termination.Percent = 1
				*pt.Spec.Termination.MinimumInstances = 5
				pt.Spec.Period.Duration = time.Hour
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodEviction
			},
		},
		{name: "a label", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Labels = map[string]string{"owner": "bob"} }},
		{name: "an annotation", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Annotations = map[string]string{"note": "hi"} }},
		{name: "the spec re-sent unchanged"},
		{
			name: "the operator adds its finalizer", user: operator,
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Finalizers = []string{"chaos.kooperkit.io/pod-terminator"} },
		},
		{
			name: "the operator removes its finalizer", user: operator,
			old: terminator(func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Namespaces = []string{"team-b"}
				pt.Finalizers = []string{"chaos.kooperkit.io/pod-terminator"}
			}),
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Finalizers = nil },
		},
		{
			name: "the status, as the operator writes it", user: operator,
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Status.TerminatedTotal = 4
				pt.Status.ObservedGeneration = 2
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.old
			if o == nil {
				o = old
			}
			obj := o.DeepCopy()
			if tt.edit != nil {
				tt.edit(obj)
			}
			a := &access{}
			resp := review(t, newWebhook(t, a), request(t, admissionv1.Update, cmp.Or(tt.user, "bob"), o, obj))
			if !resp.Allowed {
				t.Errorf("got refused (%+v), want allowed", resp.Result)
			}
			if a.asked != 0 {
				t.Errorf("got access asked %d times, want never", a.asked)
			}
		})
	}
}
