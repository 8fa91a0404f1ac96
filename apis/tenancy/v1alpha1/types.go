package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// region: tenant

// Tenant is a team's share of the cluster: the operator creates its
// namespace, named "tenant-" followed by the Tenant's name, with a resource
// quota, default container limits, a RoleBinding of the admins to the
// built-in admin ClusterRole and, when networkIsolation is set, a NetworkPolicy
// denying all ingress. Every one of them is owned by the Tenant: deleting the
// Tenant deletes them.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Cluster,shortName=tn,categories=tenancy
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 56 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a Tenant's name must be a DNS label of at most 56 characters (lowercase letters, digits, '-'): its namespace is tenant-<name>"
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`,description="The tenant's namespace"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether every child object is in place"
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why Ready is what it is"
// +kubebuilder:printcolumn:name="Isolated",type=boolean,JSONPath=`.spec.networkIsolation`,description="Ingress from other namespaces denied"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Tenant struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says who administers the tenant and what it may use.
	// +required
	Spec TenantSpec `json:"spec"`
	// Status is written by the operator: the namespace and its children.
	// +optional
	Status TenantStatus `json:"status,omitempty"`
}

// endregion: tenant

// TenantSpec says who administers the tenant and what it may use.
type TenantSpec struct {
	// Admins are bound to the built-in "admin" ClusterRole in the tenant's
	// namespace: they manage everything in it except the quota and the
	// namespace itself.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Admins []Admin `json:"admins"`

	// PodSecurity is the Pod Security Standard enforced in the namespace
	// (its pod-security.kubernetes.io/enforce label): restricted (the
	// default) or baseline. privileged is not allowed: a tenant's admins
	// could then run privileged or hostPath pods and take over the node.
	// +optional
	// +kubebuilder:default=restricted
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// Quota caps what the namespace's pods may use in total. Default 2 CPU,
	// 4Gi of memory, 20 pods.
	// +optional
	// +kubebuilder:default={cpu: "2", memory: "4Gi", pods: 20}
	Quota *Quota `json:"quota,omitempty"`

	// DefaultLimits are the CPU and memory limits (and requests) given to a
	// container that sets none, so that pods fit the quota without
	// declaring resources. Default 500m CPU, 256Mi of memory.
	// +optional
	// +kubebuilder:default={cpu: "500m", memory: "256Mi"}
	DefaultLimits *ContainerDefaults `json:"defaultLimits,omitempty"`

	// NetworkIsolation, when true, adds a NetworkPolicy that denies all
	// ingress to the namespace's pods; the tenant then allows what it needs
	// with its own policies. Default false.
	// +optional
	// +kubebuilder:default=false
	NetworkIsolation bool `json:"networkIsolation,omitempty"`
}

// Admin is a user or a group administering a tenant.
type Admin struct {
	// Kind is User or Group.
	// +required
	// +kubebuilder:validation:Enum=User;Group
	Kind string `json:"kind"`
	// Name is the user's or group's name, as the cluster's authentication
	// reports it. Names starting with "system:" are refused: they are
	// Kubernetes' own identities and groups (system:authenticated is every
	// user, system:serviceaccounts every workload).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('system:')",message="admins must not name a system: user or group (system:authenticated is every user, system:serviceaccounts every workload): name the people or the team's group"
	Name string `json:"name"`
}

// PodSecurityLevel is a Pod Security Standard a Tenant's namespace enforces.
// +kubebuilder:validation:Enum=restricted;baseline
type PodSecurityLevel string

// Pod Security levels a Tenant may ask for.
const (
	// PodSecurityRestricted is the restricted standard: the default.
	PodSecurityRestricted PodSecurityLevel = "restricted"
	// PodSecurityBaseline is the baseline standard: no privileged or
	// host-namespace pods, no hostPath volumes.
	PodSecurityBaseline PodSecurityLevel = "baseline"
)

// Quota caps a namespace's total use; each field becomes a hard limit of
// its ResourceQuota.
type Quota struct {
	// CPU caps the sum of the CPU requests and the sum of the CPU limits.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^(([0-9]*[1-9][0-9]*([.][0-9]*)?)|([0-9]*[.][0-9]*[1-9][0-9]*))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]{1,2}))?$')",message="must be a quantity greater than zero, such as 2, 500m or 4Gi (no sign, and an exponent of at most two digits)"
	CPU resource.Quantity `json:"cpu"`
	// Memory caps the sum of the memory requests and the sum of the memory
	// limits.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^(([0-9]*[1-9][0-9]*([.][0-9]*)?)|([0-9]*[.][0-9]*[1-9][0-9]*))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]{1,2}))?$')",message="must be a quantity greater than zero, such as 2, 500m or 4Gi (no sign, and an exponent of at most two digits)"
	Memory resource.Quantity `json:"memory"`
	// Pods caps the number of pods.
	// +required
	// +kubebuilder:validation:Minimum=0
	Pods int32 `json:"pods"`
	// Objects caps the number of objects of each kind the tenant's admins
	// can create in the namespace, kind by kind: ConfigMaps, Secrets,
	// Services, PersistentVolumeClaims, ServiceAccounts,
	// ReplicationControllers, Deployments, StatefulSets, DaemonSets, Jobs,
	// CronJobs, HorizontalPodAutoscalers, PodDisruptionBudgets, Ingresses,
	// NetworkPolicies, Roles and RoleBindings. What the cluster makes in
	// every namespace counts too: the default ServiceAccount, the ConfigMap
	// kube-root-ca.crt, the operator's RoleBinding and NetworkPolicy.
	// Default 100.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	Objects int32 `json:"objects,omitempty"`
}

// ContainerDefaults are the limits given to containers that set none.
type ContainerDefaults struct {
	// CPU limit (and request) of a container that sets none.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^(([0-9]*[1-9][0-9]*([.][0-9]*)?)|([0-9]*[.][0-9]*[1-9][0-9]*))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]{1,2}))?$')",message="must be a quantity greater than zero, such as 2, 500m or 4Gi (no sign, and an exponent of at most two digits)"
	CPU resource.Quantity `json:"cpu"`
	// Memory limit (and request) of a container that sets none.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^(([0-9]*[1-9][0-9]*([.][0-9]*)?)|([0-9]*[.][0-9]*[1-9][0-9]*))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]{1,2}))?$')",message="must be a quantity greater than zero, such as 2, 500m or 4Gi (no sign, and an exponent of at most two digits)"
	Memory resource.Quantity `json:"memory"`
}

// region: status

// TenantStatus is what the operator observed and created.
type TenantStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Namespace is the tenant's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Children lists the objects made for the tenant and whether each is in
	// place.
	// +optional
	// +listType=map
	// +listMapKey=kind
	Children []Child `json:"children,omitempty"`
	// Conditions: Ready is true when every child is in place for the
	// current generation.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Child is one object made for a tenant.
type Child struct {
	// Kind is the object's kind: Namespace, ResourceQuota, LimitRange,
	// RoleBinding or NetworkPolicy.
	Kind string `json:"kind"`
	// Name is the object's name.
	Name string `json:"name"`
	// Ready is true once the object is written as the spec says.
	Ready bool `json:"ready"`
	// Message says why it is not ready.
	// +optional
	Message string `json:"message,omitempty"`
}

// endregion: status

// TenantList is a list of Tenants.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Tenants.
	Items []Tenant `json:"items"`
}

// Condition types and reasons of a Tenant's status.
const (
	ConditionReady = "Ready"

	ReasonReconciled        = "Reconciled"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonNamespaceConflict = "NamespaceConflict"
	ReasonNamespaceDeleting = "NamespaceDeleting"
	ReasonInvalidSpec       = "InvalidSpec"
)

// NamespacePrefix starts the name of every tenant's namespace.
const NamespacePrefix = "tenant-"
