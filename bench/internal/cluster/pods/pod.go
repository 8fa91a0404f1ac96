// Package pods is the benchmark's workload on a real API server: the
// pod-sized object every run caches, its names, and the writes the parent
// makes (seeding before the rounds, churn during a run).
package pods

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Annotations the churn writes: the run's token and the send time in Unix
// nanoseconds. Seeding writes them too (token "seed", time zero, same
// width), so a churned pod is no bigger than a seeded one.
const (
	TokenAnnotation = "bench.kooperkit.io/token"
	SentAnnotation  = "bench.kooperkit.io/sent"
	// SeedToken is the token every pod carries before any churn.
	SeedToken = "seed"
)

// FieldManager is the manager of every write the benchmark makes: seeding
// and churn share one managedFields entry, so churn does not grow pods.
const FieldManager = "bench-seed"

// StatusFieldManager writes the pods' status, as a kubelet would: a second
// managedFields entry (subresource status), as on a real cluster's pods.
const StatusFieldManager = "kubelet"

// namePrefix is what every pod name starts with, as a ReplicaSet's pods
// do; Index parses the number after it.
const namePrefix = "checkout-api-7d4b9c8f6d-"

// replicaSetUID is the fixed UID of the (nonexistent) owning ReplicaSet.
const replicaSetUID = types.UID("5d0c6f1e-8b1a-4c52-9a57-2f4e8f2c9b31")

// Name returns the name of pod i.
func Name(i int) string { return fmt.Sprintf("%s%06d", namePrefix, i) }

// Index returns i for a name returned by Name(i), without allocating, and
// false for any other name.
func Index(name string) (int, bool) {
	if len(name) <= len(namePrefix) || name[:len(namePrefix)] != namePrefix {
		return 0, false
	}
	i := 0
	for _, c := range name[len(namePrefix):] {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	return i, true
}

// SentTime formats t as the sent annotation's value: Unix nanoseconds, 19
// digits wide (zero-padded) so every value has the same size.
func SentTime(t time.Time) string { return fmt.Sprintf("%019d", t.UnixNano()) }

// ParseSent parses a sent annotation's value; false if it is not one.
func ParseSent(s string) (int64, bool) {
	ns, err := strconv.ParseInt(s, 10, 64)
	return ns, err == nil
}

// Pod returns pod i of namespace ns as a Deployment's ReplicaSet would
// create it: two containers (an API and a proxy sidecar) with image, args,
// env, resources, ports, mounts and probes; config, secret, scratch and
// projected service-account volumes; six labels, a few annotations, an
// owner reference, tolerations, a node selector, an anti-affinity and
// security contexts. No nodeName: nothing schedules it, and with no
// controller-manager nothing deletes it.
func Pod(ns string, i int) *corev1.Pod {
	labels := map[string]string{
		"app.kubernetes.io/name":      "checkout-api",
		"app.kubernetes.io/instance":  "checkout-api-prod",
		"app.kubernetes.io/version":   "1.14.2",
		"app.kubernetes.io/component": "api",
		"app.kubernetes.io/part-of":   "shop",
		"pod-template-hash":           "7d4b9c8f6d",
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(i),
			Namespace: ns,
			Labels:    labels,
			Annotations: map[string]string{
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "9090",
				"prometheus.io/path":                "/metrics",
				"kubectl.kubernetes.io/restartedAt": "2026-11-02T10:04:05Z",
				TokenAnnotation:                     SeedToken,
				SentAnnotation:                      SentTime(time.Unix(0, 0)),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "apps/v1",
				Kind:               "ReplicaSet",
				Name:               "checkout-api-7d4b9c8f6d",
				UID:                replicaSetUID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName:            "checkout-api",
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			NodeSelector: map[string]string{
				"kubernetes.io/os":                 "linux",
				"node.kubernetes.io/instance-type": "m5.xlarge",
			},
			Tolerations: []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "shop", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
							"app.kubernetes.io/name":     "checkout-api",
							"app.kubernetes.io/instance": "checkout-api-prod",
						}},
						TopologyKey: "topology.kubernetes.io/zone",
					},
				}},
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      ptr.To[int64](10001),
				RunAsGroup:     ptr.To[int64](10001),
				FSGroup:        ptr.To[int64](10001),
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{apiContainer(), proxyContainer()},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "checkout-api-config"},
				}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "checkout-api-tls", DefaultMode: ptr.To[int32](0o440),
				}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					SizeLimit: ptr.To(resource.MustParse("256Mi")),
				}}},
				{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptr.To[int32](0o644),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
						{ConfigMap: &corev1.ConfigMapProjection{
							LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
						}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
							Path:     "namespace",
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
						}}}},
					},
				}}},
			},
		},
	}
}

func apiContainer() corev1.Container {
	return corev1.Container{
		Name:            "api",
		Image:           "registry.example.com/shop/checkout-api:1.14.2@sha256:9f2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{"serve", "--listen=:8080", "--metrics-listen=:9090", "--config=/etc/checkout/config.yaml", "--log-format=json"},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
			{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
			{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1")}}},
			{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "checkout-api-db"}, Key: "url",
			}}},
			{Name: "FEATURE_FLAGS", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "checkout-api-config"}, Key: "features",
			}}},
			{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc:4317"},
			{Name: "LOG_LEVEL", Value: "info"},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/checkout", ReadOnly: true},
			{Name: "tls", MountPath: "/etc/checkout/tls", ReadOnly: true},
			{Name: "tmp", MountPath: "/tmp"},
			{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/livez", Port: intstr.FromString("http")}},
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 2, FailureThreshold: 3,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}},
			PeriodSeconds: 5, TimeoutSeconds: 2, FailureThreshold: 3,
		},
		SecurityContext: containerSecurity(),
	}
}

func proxyContainer() corev1.Container {
	return corev1.Container{
		Name:            "proxy",
		Image:           "registry.example.com/platform/envoy:v1.31.4",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{"--config-path", "/etc/envoy/envoy.yaml", "--log-level", "warn", "--drain-time-s", "20"},
		Ports:           []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "ENVOY_UID", Value: "10001"},
			{Name: "UPSTREAM_PORT", Value: "8080"},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/envoy", ReadOnly: true},
			{Name: "tls", MountPath: "/etc/envoy/tls", ReadOnly: true},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("proxy")}},
			PeriodSeconds: 5,
		},
		SecurityContext: containerSecurity(),
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// Status returns a running pod's status as its kubelet would report it:
// conditions, IPs, start time and both containers running and ready.
func Status(i int, started time.Time) corev1.PodStatus {
	t := metav1.NewTime(started.Truncate(time.Second))
	ip := fmt.Sprintf("10.244.%d.%d", (i/250)%250, i%250+2)
	cond := func(c corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: t}
	}
	running := func(name, image, imageID string, n int) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name:         name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
			Ready:        true,
			Started:      ptr.To(true),
			Image:        image,
			ImageID:      imageID,
			ContainerID:  fmt.Sprintf("containerd://%064x", uint64(i)*4+uint64(n)),
			RestartCount: 0,
		}
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		HostIP:    "10.0.3.17",
		HostIPs:   []corev1.HostIP{{IP: "10.0.3.17"}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &t,
		ContainerStatuses: []corev1.ContainerStatus{
			running("api", "registry.example.com/shop/checkout-api:1.14.2",
				"registry.example.com/shop/checkout-api@sha256:9f2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809", 0),
			running("proxy", "registry.example.com/platform/envoy:v1.31.4",
				"registry.example.com/platform/envoy@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9", 1),
		},
		QOSClass: corev1.PodQOSBurstable,
	}
}
