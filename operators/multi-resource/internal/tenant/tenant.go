// Package tenant says what a Tenant is made of: the namespace and the
// objects in it, as server-side apply configurations, built from the Tenant
// alone. It makes no API call, so it is tested without Kubernetes; the
// handler applies what it returns.
//
// Every child carries the labels ManagedByLabel=ManagedBy (the child
// controllers watch only those) and TenantLabel=<tenant>, and a controller
// owner reference to the Tenant: deleting the Tenant deletes them through
// the garbage collector. The namespace also carries the Pod Security labels
// of the Tenant's level (PodSecurity): the operator owns them, so a hand
// edit lowering the level is undone like any other drift. The
// ResourceQuota caps, besides CPU, memory and pods, the number of objects
// of each kind the tenant's admins can create (spec.quota.objects): what
// they create is stored in etcd and cached by every controller of its
// kind.
package tenant

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
)

// Labels and names every child carries.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "kooper-multi-resource"
	TenantLabel    = "tenancy.kooperkit.io/tenant"
)

// Pod Security Admission labels of a namespace: the level its pods must
// meet (enforce: others are refused), are warned about (warn: on creation
// of a pod or of a workload whose pod template violates it) and audited
// (audit), each with the version of the standard to apply.
const (
	PodSecurityEnforceLabel        = "pod-security.kubernetes.io/enforce"
	PodSecurityEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
	PodSecurityWarnLabel           = "pod-security.kubernetes.io/warn"
	PodSecurityWarnVersionLabel    = "pod-security.kubernetes.io/warn-version"
	PodSecurityAuditLabel          = "pod-security.kubernetes.io/audit"
	PodSecurityAuditVersionLabel   = "pod-security.kubernetes.io/audit-version"
	// PodSecurityVersion is the version of the standards enforced: the
	// API server's own, so the checks tighten as the cluster is upgraded.
	PodSecurityVersion = "latest"
)

// Names of the objects in a tenant's namespace.
const (
	QuotaName         = "tenant-quota"
	LimitRangeName    = "tenant-limits"
	RoleBindingName   = "tenant-admins"
	NetworkPolicyName = "tenant-default-deny"
	// AdminClusterRole is the built-in ClusterRole the admins are bound to.
	AdminClusterRole = "admin"
)

// Kinds of the children, as status.children names them.
const (
	KindNamespace     = "Namespace"
	KindResourceQuota = "ResourceQuota"
	KindLimitRange    = "LimitRange"
	KindRoleBinding   = "RoleBinding"
	KindNetworkPolicy = "NetworkPolicy"
)

// Namespace returns the name of t's namespace.
func Namespace(t *tenancyv1alpha1.Tenant) string { return tenancyv1alpha1.NamespacePrefix + t.Name }

// Children is everything a Tenant is made of, in the order to apply it: the
// namespace first.
type Children struct {
	Namespace   *corev1ac.NamespaceApplyConfiguration
	Quota       *corev1ac.ResourceQuotaApplyConfiguration
	LimitRange  *corev1ac.LimitRangeApplyConfiguration
	RoleBinding *rbacv1ac.RoleBindingApplyConfiguration
	// NetworkPolicy is nil when the tenant is not isolated: it must not
	// exist.
	NetworkPolicy *networkingv1ac.NetworkPolicyApplyConfiguration
}

// region: desired

// Desired returns the children of t. Every field the operator cares about is
// set, so applying them restores anything changed by hand, and leaves out
// what it does not own (other labels, other objects in the namespace).
func Desired(t *tenancyv1alpha1.Tenant) Children {
	ns := Namespace(t)
	labels := map[string]string{ManagedByLabel: ManagedBy, TenantLabel: t.Name}
	owner := metav1ac.OwnerReference().
		WithAPIVersion(tenancyv1alpha1.SchemeGroupVersion.String()).
		WithKind("Tenant").
		WithName(t.Name).
		WithUID(t.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)

	q, d := t.Spec.Quota, t.Spec.DefaultLimits
	c := Children{
		Namespace: corev1ac.Namespace(ns).WithLabels(labels).WithLabels(podSecurityLabels(t)).WithOwnerReferences(owner),
		Quota: corev1ac.ResourceQuota(QuotaName, ns).WithLabels(labels).WithOwnerReferences(owner).
			WithSpec(corev1ac.ResourceQuotaSpec().WithHard(hard(q))),
		LimitRange: corev1ac.LimitRange(LimitRangeName, ns).WithLabels(labels).WithOwnerReferences(owner).
			WithSpec(corev1ac.LimitRangeSpec().WithLimits(corev1ac.LimitRangeItem().
				WithType(corev1.LimitTypeContainer).
				WithDefault(corev1.ResourceList{corev1.ResourceCPU: d.CPU, corev1.ResourceMemory: d.Memory}).
				WithDefaultRequest(corev1.ResourceList{corev1.ResourceCPU: d.CPU, corev1.ResourceMemory: d.Memory}))),
		RoleBinding: rbacv1ac.RoleBinding(RoleBindingName, ns).WithLabels(labels).WithOwnerReferences(owner).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(AdminClusterRole)).
			WithSubjects(subjects(t.Spec.Admins)...),
	}
	if t.Spec.NetworkIsolation {
		// Selects every pod and allows no ingress: all ingress is denied.
		c.NetworkPolicy = networkingv1ac.NetworkPolicy(NetworkPolicyName, ns).WithLabels(labels).WithOwnerReferences(owner).
			WithSpec(networkingv1ac.NetworkPolicySpec().
				WithPodSelector(metav1ac.LabelSelector()).
				WithPolicyTypes(networkingv1.PolicyTypeIngress))
	}
	return c
}

// endregion: desired

// DefaultObjects is how many objects of each counted kind a namespace may
// hold when its Tenant's spec.quota.objects is unset (0): the schema's
// default, for a Tenant stored before the field existed.
const DefaultObjects = 100

// countedObjects are the kinds whose number in a namespace spec.quota.objects
// caps, each kind on its own (object count quota, count/<resource>.<group>):
// what the admin ClusterRole lets a tenant's admins create, but for Pods,
// which spec.quota.pods caps, and ReplicaSets, which Deployments make (up
// to revisionHistoryLimit old ones each): a cap on them would stall
// rollouts. Each object is stored in etcd and cached by every controller
// that watches its kind: a tenant must not be able to make them without
// bound.
var countedObjects = []corev1.ResourceName{
	"count/configmaps",
	"count/secrets",
	"count/services",
	"count/persistentvolumeclaims",
	"count/serviceaccounts",
	"count/replicationcontrollers",
	"count/deployments.apps",
	"count/statefulsets.apps",
	"count/daemonsets.apps",
	"count/jobs.batch",
	"count/cronjobs.batch",
	"count/horizontalpodautoscalers.autoscaling",
	"count/poddisruptionbudgets.policy",
	"count/ingresses.networking.k8s.io",
	"count/networkpolicies.networking.k8s.io",
	"count/roles.rbac.authorization.k8s.io",
	"count/rolebindings.rbac.authorization.k8s.io",
}

// hard returns the ResourceQuota's hard limits for q: CPU and memory (the
// requests and the limits), pods, and the number of objects of each
// counted kind.
func hard(q *tenancyv1alpha1.Quota) corev1.ResourceList {
	l := corev1.ResourceList{
		corev1.ResourceRequestsCPU:    q.CPU,
		corev1.ResourceLimitsCPU:      q.CPU,
		corev1.ResourceRequestsMemory: q.Memory,
		corev1.ResourceLimitsMemory:   q.Memory,
		corev1.ResourcePods:           *resourceInt(int64(q.Pods)),
	}
	objects := int64(q.Objects)
	if objects <= 0 {
		objects = DefaultObjects
	}
	for _, r := range countedObjects {
		l[r] = *resourceInt(objects)
	}
	return l
}

// PodSecurity returns the Pod Security level t's namespace enforces: the
// spec's, and restricted when it is unset (the schema defaults it, but an
// object written before the field existed, or under another CRD, may lack
// it) or anything but baseline. Never privileged: a tenant's admins could
// then run privileged or hostPath pods and take over a node.
func PodSecurity(t *tenancyv1alpha1.Tenant) tenancyv1alpha1.PodSecurityLevel {
	if t.Spec.PodSecurity == tenancyv1alpha1.PodSecurityBaseline {
		return tenancyv1alpha1.PodSecurityBaseline
	}
	return tenancyv1alpha1.PodSecurityRestricted
}

// podSecurityLabels returns the namespace's Pod Security labels: enforce,
// warn and audit all at t's level, so that what warns is what is refused.
func podSecurityLabels(t *tenancyv1alpha1.Tenant) map[string]string {
	level := string(PodSecurity(t))
	return map[string]string{
		PodSecurityEnforceLabel: level, PodSecurityEnforceVersionLabel: PodSecurityVersion,
		PodSecurityWarnLabel: level, PodSecurityWarnVersionLabel: PodSecurityVersion,
		PodSecurityAuditLabel: level, PodSecurityAuditVersionLabel: PodSecurityVersion,
	}
}

func subjects(admins []tenancyv1alpha1.Admin) []*rbacv1ac.SubjectApplyConfiguration {
	out := make([]*rbacv1ac.SubjectApplyConfiguration, 0, len(admins))
	for _, a := range admins {
		out = append(out, rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(a.Kind).WithName(a.Name))
	}
	return out
}

// OwnedBy reports whether obj's controller is the Tenant t: a Tenant of
// this API group (any version) with t's UID, which is what makes it t and
// not an earlier Tenant of the same name.
func OwnedBy(obj metav1.Object, t *tenancyv1alpha1.Tenant) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.UID != t.UID || ref.Kind != "Tenant" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == tenancyv1alpha1.SchemeGroupVersion.Group
}

func resourceInt(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// Unusable says why a pod using t's default container limits could never
// start in t's namespace, or returns "" when one can: the LimitRange gives a
// container without resources requests equal to the default limits, and a
// request above the quota is refused.
func Unusable(t *tenancyv1alpha1.Tenant) string {
	q, d := t.Spec.Quota, t.Spec.DefaultLimits
	if q == nil || d == nil {
		return ""
	}
	var over []string
	if d.CPU.Cmp(q.CPU) > 0 {
		over = append(over, fmt.Sprintf("defaultLimits.cpu %s exceeds quota.cpu %s", d.CPU.String(), q.CPU.String()))
	}
	if d.Memory.Cmp(q.Memory) > 0 {
		over = append(over, fmt.Sprintf("defaultLimits.memory %s exceeds quota.memory %s", d.Memory.String(), q.Memory.String()))
	}
	if len(over) == 0 {
		return ""
	}
	return strings.Join(over, " and ") + ": a container without resources of its own can never start in the namespace"
}
