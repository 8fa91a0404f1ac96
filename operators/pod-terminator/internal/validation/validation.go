// Package validation checks a PodTerminator's spec for what the CRD schema
// and its CEL rules cannot say, or say badly: label selector syntax,
// selectors that match by exclusion only, protected namespaces, selectors
// that would match the operator's own pods. It also warns about specs that
// are valid but probably not meant.
//
// The admission webhook refuses an object that fails these checks, and the
// handler marks one that slipped past (webhook not installed) Invalid in its
// status: both call Validate, so they never disagree.
package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
)

// SystemNamespaces are the namespaces Kubernetes itself runs in. They are
// always protected.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// HighPercent is the terminationPercent above which a spec without dryRun
// gets a warning.
const HighPercent = 50

// Rules are the operator's own settings the checks depend on.
type Rules struct {
	// Namespace is the operator's namespace, protected like
	// SystemNamespaces. Empty: none besides those.
	Namespace string
	// PodLabels are the labels of the operator's own pods: a selector that
	// matches them is refused. Empty: not checked.
	PodLabels map[string]string
}

// Protected returns the namespaces no PodTerminator may target, sorted.
func (r Rules) Protected() []string {
	out := slices.Clone(SystemNamespaces)
	if r.Namespace != "" && !slices.Contains(out, r.Namespace) {
		out = append(out, r.Namespace)
	}
	slices.Sort(out)
	return out
}

// ErrInvalid is wrapped by every error Validate returns.
var ErrInvalid = errors.New("invalid PodTerminator")

// Validate checks spec against rules. It returns warnings for a valid but
// risky spec, and an error wrapping ErrInvalid that lists every problem, in
// words meant for the person who wrote the object.
func Validate(spec *chaosv1alpha1.PodTerminatorSpec, rules Rules) (warnings []string, err error) {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	// region: checks
	sel, serr := metav1.LabelSelectorAsSelector(&spec.Selector)
	switch {
	case serr != nil:
		bad("spec.selector is not a valid label selector: %v", serr)
	case sel.Empty():
		bad("spec.selector must not be empty: set matchLabels or matchExpressions (an empty selector would match every pod)")
	case !positive(sel):
		bad("spec.selector %q matches by exclusion only (NotIn, DoesNotExist, !=): add a matchLabels entry or an In or Exists expression, so it cannot match nearly every pod in the cluster", sel)
	case len(rules.PodLabels) > 0 && sel.Matches(labels.Set(rules.PodLabels)):
		bad("spec.selector %q matches the pod-terminator's own pods (labels %s): the operator would terminate itself", sel, labels.Set(rules.PodLabels))
	}

	protected := rules.Protected()
	for _, ns := range spec.Namespaces {
		if msgs := k8svalidation.IsDNS1123Label(ns); len(msgs) > 0 {
			bad("spec.namespaces: %q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
			continue
		}
		if slices.Contains(protected, ns) {
			bad("spec.namespaces: %q is protected: the pod-terminator never terminates pods in %s", ns, strings.Join(protected, ", "))
		}
	}
	// endregion: checks

	// The schema enforces these; checked again for objects written before
	// the CRD was installed or with a different version of it. Unset
	// pointers mean the schema's defaults were not applied.
	if p := spec.TerminationPercent; p < 1 || p > 100 {
		bad("spec.terminationPercent must be between 1 and 100, got %d", p)
	}
	switch p := spec.PeriodSeconds; {
	case p == nil:
		bad("spec.periodSeconds is unset: the CRD schema defaults it to 60; is the CRD from manifests/crds installed?")
	case *p < 1:
		bad("spec.periodSeconds must be 1 or more, got %d", *p)
	}
	switch m := spec.MinimumInstances; {
	case m == nil:
		bad("spec.minimumInstances is unset: the CRD schema defaults it to 1; is the CRD from manifests/crds installed?")
	case *m < 0:
		bad("spec.minimumInstances must be 0 or more, got %d", *m)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}

	if !spec.DryRun {
		if spec.TerminationPercent > HighPercent {
			warnings = append(warnings, fmt.Sprintf("terminationPercent %d without dryRun terminates most matching pods every period; try dryRun: true first", spec.TerminationPercent))
		}
		if *spec.MinimumInstances == 0 {
			warnings = append(warnings, "minimumInstances 0 without dryRun lets every matching pod be terminated at once")
		}
	}
	return warnings, nil
}

// positive reports whether sel has a requirement that a pod must meet by
// having a label (=, ==, in, exists), rather than only by lacking one.
func positive(sel labels.Selector) bool {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In, selection.Exists:
			return true
		}
	}
	return false
}
