package v1alpha1

import (
	"encoding/json"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

// region: conversion
// region: convertto

// v1alpha1 is served, deprecated, beside v1beta1, the version stored: the
// API server asks the operator's conversion webhook to convert between
// them, which calls these two functions. Neither fails on what a user
// wrote: a conversion that fails makes the object unreadable, in both
// versions, to everyone (the garbage collector and namespace deletion
// included).

// ConvertTo converts pt into dst, a v1beta1 PodTerminator. What v1beta1
// has and v1alpha1 has no field for comes back from the annotation
// v1beta1.PreservedAnnotation, if ConvertFrom wrote it, and the annotation
// is removed.
func (pt *PodTerminator) ConvertTo(dst *v1beta1.PodTerminator) {
	dst.TypeMeta = pt.TypeMeta
	if dst.APIVersion != "" {
		dst.APIVersion = v1beta1.SchemeGroupVersion.String()
	}
	pt.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	kept := takePreserved(&dst.ObjectMeta)

	s := pt.Spec.DeepCopy()
	dst.Spec = v1beta1.PodTerminatorSpec{
		Selector:   s.Selector,
		Namespaces: s.Namespaces,
		DryRun:     s.DryRun,
		Termination: v1beta1.Termination{
			Percent:          s.TerminationPercent,
			MaxPods:          kept.MaxPods,
			MinimumInstances: s.MinimumInstances,
			Method:           v1beta1.TerminationMethod(s.TerminationMethod),
		},
	}
	switch {
	case s.PeriodSeconds == nil:
	case kept.Period != nil && seconds(kept.Period.Duration) == *s.PeriodSeconds:
		// Not whole seconds, and periodSeconds not changed since.
		dst.Spec.Period = kept.Period
	default:
		dst.Spec.Period = &metav1.Duration{Duration: time.Duration(*s.PeriodSeconds) * time.Second}
	}
	dst.Status = statusTo(&pt.Status)
}

// endregion: convertto
// region: convertfrom

// ConvertFrom converts src, a v1beta1 PodTerminator, into pt. A period
// that is not whole seconds is periodSeconds rounded toward zero; it and
// maxPods, which v1alpha1 has no field for, are kept in the annotation
// v1beta1.PreservedAnnotation for ConvertTo.
func (pt *PodTerminator) ConvertFrom(src *v1beta1.PodTerminator) {
	pt.TypeMeta = src.TypeMeta
	if pt.APIVersion != "" {
		pt.APIVersion = SchemeGroupVersion.String()
	}
	src.ObjectMeta.DeepCopyInto(&pt.ObjectMeta)
	takePreserved(&pt.ObjectMeta) // a stale copy: written anew below

	s := src.Spec.DeepCopy()
	pt.Spec = PodTerminatorSpec{
		Selector:           s.Selector,
		Namespaces:         s.Namespaces,
		DryRun:             s.DryRun,
		TerminationPercent: s.Termination.Percent,
		MinimumInstances:   s.Termination.MinimumInstances,
		TerminationMethod:  TerminationMethod(s.Termination.Method),
	}
	var kept preserved
	if s.Period != nil {
		sec := seconds(s.Period.Duration)
		pt.Spec.PeriodSeconds = &sec
		if time.Duration(sec)*time.Second != s.Period.Duration {
			kept.Period = s.Period
		}
	}
	kept.MaxPods = s.Termination.MaxPods
	if kept != (preserved{}) {
		b, _ := json.Marshal(kept) // a Duration and an int32 always marshal
		if pt.Annotations == nil {
			pt.Annotations = map[string]string{}
		}
		pt.Annotations[v1beta1.PreservedAnnotation] = string(b)
	}
	pt.Status = statusFrom(&src.Status)
}

// endregion: convertfrom
// region: preserved

// preserved is what v1beta1.PreservedAnnotation holds.
type preserved struct {
	Period  *metav1.Duration `json:"period,omitempty"`
	MaxPods *int32           `json:"maxPods,omitempty"`
}

// takePreserved removes v1beta1.PreservedAnnotation from m and returns
// what it held; nothing if it is not JSON of a preserved (set by hand, say).
func takePreserved(m *metav1.ObjectMeta) preserved {
	var p preserved
	raw, ok := m.Annotations[v1beta1.PreservedAnnotation]
	if !ok {
		return p
	}
	delete(m.Annotations, v1beta1.PreservedAnnotation)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	if json.Unmarshal([]byte(raw), &p) != nil {
		return preserved{}
	}
	return p
}

// endregion: preserved

// seconds is d in whole seconds, rounded toward zero, within int32.
func seconds(d time.Duration) int32 {
	s := d / time.Second
	return int32(max(math.MinInt32, min(math.MaxInt32, s)))
}

// statusTo and statusFrom copy a status: the two versions' have the same
// fields.
func statusTo(s *PodTerminatorStatus) v1beta1.PodTerminatorStatus {
	s = s.DeepCopy()
	out := v1beta1.PodTerminatorStatus{
		ObservedGeneration:  s.ObservedGeneration,
		Conditions:          s.Conditions,
		LastTerminationTime: s.LastTerminationTime,
		TerminatedTotal:     s.TerminatedTotal,
	}
	for _, p := range s.LastTerminated {
		out.LastTerminated = append(out.LastTerminated, v1beta1.TerminatedPod(p))
	}
	return out
}

func statusFrom(s *v1beta1.PodTerminatorStatus) PodTerminatorStatus {
	s = s.DeepCopy()
	out := PodTerminatorStatus{
		ObservedGeneration:  s.ObservedGeneration,
		Conditions:          s.Conditions,
		LastTerminationTime: s.LastTerminationTime,
		TerminatedTotal:     s.TerminatedTotal,
	}
	for _, p := range s.LastTerminated {
		out.LastTerminated = append(out.LastTerminated, TerminatedPod(p))
	}
	return out
}

// endregion: conversion
