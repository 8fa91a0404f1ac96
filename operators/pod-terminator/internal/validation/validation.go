// Package validation checks a PodTerminator's spec for what the CRD schema
// and its CEL rules cannot say, or say badly: label selector syntax,
// selectors that match by exclusion only, protected namespaces, selectors
// that would match the operator's own pods. It also warns about specs that
// are valid but probably not meant.
//
// The admission webhook refuses an object that fails these checks, and the
// handler marks one that slipped past (webhook not installed) Invalid in its
// status: both call Validate, so they never disagree. An error describes at
// most MaxProblems problems and counts the rest, and quotes at most a few
// hundred bytes of any value: its size never grows with the object's.
//
// Validate checks the spec alone. Whether the person writing it may delete
// the pods it targets depends on who they are: the webhook asks the API
// server that (internal/webhook).
package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

// SystemNamespaces are the namespaces Kubernetes itself runs in. They are
// always protected.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// HighPercent is the termination.percent above which a spec without dryRun
// gets a warning.
const HighPercent = 50

// MaxNamespaces is the most entries spec.namespaces may hold, as in the CRD
// schema.
const MaxNamespaces = 64

// MaxProblems is how many problems an error from Validate describes; the
// rest are only counted ("and 12 more problems"). However many entries an
// object holds, the message stays small and nothing is built for the
// problems not described.
const MaxProblems = 10

// Rules are the operator's own settings the checks depend on.
type Rules struct {
	// Namespace is the operator's namespace, protected like
	// SystemNamespaces. Empty: none besides those.
	Namespace string
	// ProtectedNamespaces are more namespaces no PodTerminator may target,
	// chosen by whoever runs the operator (its -protected-namespaces flag).
	// Empty: none besides SystemNamespaces and Namespace.
	ProtectedNamespaces []string
	// PodLabels are the labels of the operator's own pods: a selector that
	// matches them is refused. Empty: not checked.
	PodLabels map[string]string
}

// Protected returns the namespaces no PodTerminator may target, sorted and
// without duplicates: SystemNamespaces, Namespace and ProtectedNamespaces.
func (r Rules) Protected() []string {
	out := make([]string, 0, len(SystemNamespaces)+1+len(r.ProtectedNamespaces))
	out = append(out, SystemNamespaces...)
	if r.Namespace != "" {
		out = append(out, r.Namespace)
	}
	for _, ns := range r.ProtectedNamespaces {
		if ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ErrInvalid is wrapped by every error Validate returns.
var ErrInvalid = errors.New("invalid PodTerminator")

// Validate checks spec against rules. It returns warnings for a valid but
// risky spec, and an error wrapping ErrInvalid that lists the problems (the
// first MaxProblems, then how many more), in words meant for the person who
// wrote the object.
func Validate(spec *chaosv1beta1.PodTerminatorSpec, rules Rules) (warnings []string, err error) {
	var bad problems

	// region: checks
	sel, serr := metav1.LabelSelectorAsSelector(&spec.Selector)
	switch {
	case serr != nil:
		bad.add("spec.selector is not a valid label selector: %s", clip(serr.Error()))
	case sel.Empty():
		bad.add("spec.selector must not be empty: set matchLabels or matchExpressions (an empty selector would match every pod)")
	case !positive(sel):
		bad.add("spec.selector %q matches by exclusion only (NotIn, DoesNotExist, !=): add a matchLabels entry or an In or Exists expression, so it cannot match nearly every pod in the cluster", clip(sel.String()))
	case len(rules.PodLabels) > 0 && sel.Matches(labels.Set(rules.PodLabels)):
		bad.add("spec.selector %q matches the pod-terminator's own pods (labels %s): the operator would terminate itself", clip(sel.String()), labels.Set(rules.PodLabels))
	}

	if n := len(spec.Namespaces); n > MaxNamespaces {
		bad.add("spec.namespaces has %d entries, at most %d", n, MaxNamespaces)
	}
	protected := rules.Protected()
	for _, ns := range spec.Namespaces {
		isName := isLabel(ns)
		switch {
		case isName && !slices.Contains(protected, ns):
			continue
		case bad.full():
			bad.more++ // counted only: nothing is built per entry past the cap
		case !isName:
			bad.add("spec.namespaces: %q is not a namespace name: %s", clip(ns), strings.Join(k8svalidation.IsDNS1123Label(ns), "; "))
		default:
			bad.add("spec.namespaces: %q is protected: the pod-terminator never terminates pods in %s", ns, strings.Join(protected, ", "))
		}
	}
	// endregion: checks

	// The schema enforces these; checked again for objects written before
	// the CRD was installed or with a different version of it. Unset
	// pointers mean the schema's defaults were not applied.
	t := &spec.Termination
	if p := t.Percent; p < 1 || p > 100 {
		bad.add("spec.termination.percent must be between 1 and 100, got %d", p)
	}
	if m := t.MaxPods; m != nil && *m < 1 {
		bad.add("spec.termination.maxPods must be 1 or more, got %d", *m)
	}
	switch p := spec.Period; {
	case p == nil:
		bad.add("spec.period is unset: the CRD schema defaults it to 60s; is the CRD from manifests/crds installed?")
	case p.Duration < time.Second:
		bad.add("spec.period must be 1s or more, got %s", p.Duration)
	}
	switch m := t.MinimumInstances; {
	case m == nil:
		bad.add("spec.termination.minimumInstances is unset: the CRD schema defaults it to 1; is the CRD from manifests/crds installed?")
	case *m < 0:
		bad.add("spec.termination.minimumInstances must be 0 or more, got %d", *m)
	}
	if err := bad.err(); err != nil {
		return nil, err
	}

	if !spec.DryRun {
		if t.Percent > HighPercent && t.MaxPods == nil {
			warnings = append(warnings, fmt.Sprintf("termination.percent %d without dryRun or maxPods terminates most matching pods every period; try dryRun: true first", t.Percent))
		}
		if *t.MinimumInstances == 0 {
			warnings = append(warnings, "termination.minimumInstances 0 without dryRun lets every matching pod be terminated at once")
		}
	}
	return warnings, nil
}

// problems collects what is wrong with a spec: the first MaxProblems
// described, the rest counted. A message listing every problem would grow
// with the object: a 1 MB list of bad namespaces would make a 30 MB answer.
type problems struct {
	described []string
	more      int
}

// full reports whether no more problems will be described: a caller with
// a costly message then only counts the next one (more++).
func (p *problems) full() bool { return len(p.described) >= MaxProblems }

// add describes a problem, or counts it once full.
func (p *problems) add(format string, a ...any) {
	if p.full() {
		p.more++
		return
	}
	p.described = append(p.described, fmt.Sprintf(format, a...))
}

// err returns nil without problems, else an error wrapping ErrInvalid.
func (p *problems) err() error {
	if len(p.described) == 0 {
		return nil
	}
	msg := strings.Join(p.described, "; ")
	switch {
	case p.more == 1:
		msg += "; and 1 more problem"
	case p.more > 1:
		msg += fmt.Sprintf("; and %d more problems", p.more)
	}
	return fmt.Errorf("%w: %s", ErrInvalid, msg)
}

// maxQuoted is how much of a value written by the user a message quotes.
const maxQuoted = 256

// clip shortens s to maxQuoted bytes, so that a message quoting a value
// from the object stays small whatever its size.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}

// isLabel reports whether s is a DNS-1123 label (a namespace name), as
// k8svalidation.IsDNS1123Label does, without allocating: it runs for every
// entry, also those past MaxProblems.
func isLabel(s string) bool {
	if s == "" || len(s) > k8svalidation.DNS1123LabelMaxLength {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
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
