package controller_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// benchPod is a pod as a Deployment makes it: two containers, probes,
// volumes, an owner, and the managedFields of two field managers.
func benchPod() *corev1.Pod {
	container := func(name string) corev1.Container {
		c := corev1.Container{
			Name: name, Image: "registry.example.com/shop/" + name + ":1.42.0",
			Args:  []string{"--port=8080", "--log-level=info", "--metrics-addr=:9090"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/shop"}, {Name: "token", MountPath: "/var/run/secrets/tokens", ReadOnly: true}},
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 5},
		}
		for i := range 8 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("SHOP_SETTING_%d", i), Value: fmt.Sprintf("value-%d", i)})
		}
		return c
	}
	now := metav1.NewTime(time.Unix(1_790_000_000, 0))
	fields := func(manager string) metav1.ManagedFieldsEntry {
		raw := make([]byte, 0, 2048)
		raw = append(raw, `{"f:metadata":{"f:labels":{`...)
		for i := range 40 {
			raw = fmt.Appendf(raw, `"f:field-%02d":{},`, i)
		}
		raw = append(raw, `"f:last":{}}}}`...)
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw))}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web-7d4b9c8f6d-x2x9k", GenerateName: "web-7d4b9c8f6d-", UID: "0b6f4a53-3f49-4a1c-9d3c-5a0e6f0f1d2e",
			ResourceVersion: "123456", CreationTimestamp: now,
			Labels:          map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "7d4b9c8f6d", "team": "shop", "env": "prod", "version": "1.42.0"},
			Annotations:     map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6d", UID: "3c1d1c1e-9a8b-4f5e-8d7c-6b5a4f3e2d1c"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{fields("kube-controller-manager"), fields("kubelet")},
		},
		Spec: corev1.PodSpec{
			Containers:         []corev1.Container{container("web"), container("sidecar")},
			Volumes:            []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}},
			NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:        []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			ServiceAccountName: "web",
		},
	}
}

// BenchmarkDeepCopy measures the copy each handling gets, for what a cache
// may hold.
//
//	cd kooper && go test -run '^$' -bench DeepCopy -benchmem ./controller
func BenchmarkDeepCopy(b *testing.B) {
	withFields := benchPod()
	without := benchPod()
	without.ManagedFields = nil
	metaOnly := &metav1.PartialObjectMetadata{ObjectMeta: *without.ObjectMeta.DeepCopy()}
	for _, bc := range []struct {
		name string
		obj  runtime.Object
	}{
		{"pod with managedFields", withFields},
		{"pod (the default cache)", without},
		{"pod metadata only", metaOnly},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.obj.DeepCopyObject()
			}
		})
	}
}
