package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// region: podterminator

// PodTerminator deletes a share of the pods matching its selector every
// period, to show that their workloads survive losing pods. It is
// cluster-scoped: one PodTerminator can reach pods in several namespaces.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Cluster,shortName=pt,categories=chaos
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the last period ran as asked"
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why Ready is what it is"
// +kubebuilder:printcolumn:name="Percent",type=integer,JSONPath=`.spec.termination.percent`,description="Share of the matching pods terminated each period"
// +kubebuilder:printcolumn:name="Minimum",type=integer,JSONPath=`.spec.termination.minimumInstances`,description="Matching pods always left running"
// +kubebuilder:printcolumn:name="Dry-Run",type=boolean,JSONPath=`.spec.dryRun`,description="Only report what would be terminated"
// +kubebuilder:printcolumn:name="Last Termination",type=date,JSONPath=`.status.lastTerminationTime`,description="When pods were last terminated"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodTerminator struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which pods to terminate, how many and how often.
	// +required
	Spec PodTerminatorSpec `json:"spec"`
	// Status is written by the operator: what it observed and terminated.
	// +optional
	Status PodTerminatorStatus `json:"status,omitempty"`
}

// endregion: podterminator

// region: spec

// PodTerminatorSpec says which pods to terminate, how many and how often.
type PodTerminatorSpec struct {
	// Selector chooses the pods that may be terminated, by their labels. It
	// must set matchLabels or matchExpressions: an empty selector would match
	// every pod and is refused.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="selector must not be empty: set matchLabels or matchExpressions (an empty selector would match every pod)"
	Selector metav1.LabelSelector `json:"selector"`

	// Namespaces limits the search for matching pods to these namespaces,
	// at most 64, each a namespace name (a DNS label). Empty or unset means
	// every namespace. Either way, the creator must be allowed to delete
	// pods in each of them (cluster-wide when empty): the admission webhook
	// checks it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`
	// region: period

	// Period is the time between two terminations, a duration such as
	// "90s" or "1m30s". At least 1s, default 60s. (v1alpha1's
	// periodSeconds.)
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="period must be at least 1s"
	Period *metav1.Duration `json:"period,omitempty"`

	// Termination says how many of the matching pods are terminated each
	// period, and how.
	// +required
	Termination Termination `json:"termination"`
	// endregion: period

	// DryRun, when true, makes the operator report the pods it would
	// terminate (events and status) without deleting them. Default false.
	// +optional
	// +kubebuilder:default=false
	DryRun bool `json:"dryRun,omitempty"`
}

// Termination says how many of the matching pods are terminated each
// period, and how.
type Termination struct {
	// Percent is the share of the matching pods terminated each period,
	// from 1 to 100. The count is rounded down: floor(percent × matching /
	// 100) pods, then capped by maxPods if set, and so that at least
	// minimumInstances matching pods survive (never below 0). With 10
	// matching pods, 25 percent and minimumInstances 1, 2 pods are
	// terminated; with 3 matching pods, 25 percent terminates none.
	// (v1alpha1's terminationPercent.)
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent"`

	// MaxPods, when set, is the most pods terminated in one period,
	// whatever percent gives. Minimum 1. (Not in v1alpha1.)
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxPods *int32 `json:"maxPods,omitempty"`

	// MinimumInstances is the number of matching Ready pods always left
	// running: the count terminated in a period is lowered so that at least
	// this many survive, down to terminating none. Only Ready pods count,
	// and only Ready pods are terminated: pending, starting and failing
	// pods neither count as instances nor are chosen. The minimum is per
	// PodTerminator, across every matched namespace together: two
	// PodTerminators selecting the same pods each apply their own. Use a
	// PodDisruptionBudget (honoured with the default method Eviction) for
	// a floor that holds whatever terminates the pods. Minimum 0, default
	// 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	MinimumInstances *int32 `json:"minimumInstances,omitempty"`

	// Method is how a pod is terminated. Eviction (the default) goes
	// through the Eviction API, so PodDisruptionBudgets are honoured: a
	// pod a budget protects is left alone, and the refusal is reported in
	// status and in an Event, then tried again next period. Delete deletes
	// pods directly, ignoring every budget, as chaos tools that test
	// budget-less failures do. (v1alpha1's terminationMethod.)
	// +optional
	// +kubebuilder:default=Eviction
	Method TerminationMethod `json:"method,omitempty"`
}

// TerminationMethod is how the operator terminates a pod.
// +kubebuilder:validation:Enum=Eviction;Delete
type TerminationMethod string

// Termination methods.
const (
	// TerminationMethodEviction evicts pods through the Eviction API,
	// honouring PodDisruptionBudgets.
	TerminationMethodEviction TerminationMethod = "Eviction"
	// TerminationMethodDelete deletes pods, ignoring PodDisruptionBudgets.
	TerminationMethodDelete TerminationMethod = "Delete"
)

// PreservedAnnotation holds, on a PodTerminator read or written through
// v1alpha1, what of its v1beta1 spec v1alpha1 has no field for (JSON: a
// period that is not whole seconds, maxPods), so that converting back to
// v1beta1 loses nothing. The conversion writes and removes it; it is not
// for users to set.
const PreservedAnnotation = "chaos.kooperkit.io/v1beta1-spec"

// endregion: spec

// Condition types of a PodTerminator.
const (
	// ConditionReady is True while the operator terminates pods as the spec
	// says, False with a reason when it cannot.
	ConditionReady = "Ready"
	// ConditionInvalid is True when the spec cannot be acted on (for example
	// a selector the API server accepted but the operator cannot parse); the
	// reason and message say why. The operator terminates nothing meanwhile.
	ConditionInvalid = "Invalid"
)

// Reasons of the PodTerminator conditions.
const (
	// ReasonReconciled: the last period was handled as the spec says.
	ReasonReconciled = "Reconciled"
	// ReasonInvalidSpec: the spec cannot be acted on; see the message.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonTerminationFailed: listing or deleting pods failed; see the message.
	ReasonTerminationFailed = "TerminationFailed"
	// ReasonDisruptionBudget: a PodDisruptionBudget refused some evictions;
	// the message names the pods. They are tried again next period.
	ReasonDisruptionBudget = "DisruptionBudget"
)

// MaxLastTerminated is how many pods PodTerminatorStatus.LastTerminated
// keeps, the most recent first.
const MaxLastTerminated = 10

// PodTerminatorStatus is written by the operator: what it observed and
// terminated.
type PodTerminatorStatus struct {
	// ObservedGeneration is the metadata.generation of the spec this status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the latest observations: Ready and Invalid, each with a
	// reason and a message.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// LastTerminationTime is when pods were last terminated (or, with dryRun,
	// would have been).
	// +optional
	LastTerminationTime *metav1.Time `json:"lastTerminationTime,omitempty"`

	// TerminatedTotal counts the pods terminated since the PodTerminator was
	// created (with dryRun, those that would have been).
	// +optional
	TerminatedTotal int64 `json:"terminatedTotal,omitempty"`

	// LastTerminated lists the most recently terminated pods, the most
	// recent first; at most 10 are kept.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	LastTerminated []TerminatedPod `json:"lastTerminated,omitempty"`
}

// TerminatedPod identifies a pod the operator terminated, and when.
type TerminatedPod struct {
	// Namespace of the terminated pod.
	Namespace string `json:"namespace"`
	// Name of the terminated pod.
	Name string `json:"name"`
	// Time at which the pod was terminated.
	Time metav1.Time `json:"time"`
}

// PodTerminatorList is a list of PodTerminators.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PodTerminatorList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the PodTerminators.
	Items []PodTerminator `json:"items"`
}
