package procnode

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	vals := map[string]string{"A": "x", "EMPTY": ""}
	for _, tt := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "x"},
		{"a-$(A)-b", "a-x-b"},
		{"$(EMPTY)", ""},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"end$", "end$"},
	} {
		if got := expand(tt.in, vals); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestResourceValue(t *testing.T) {
	s := envSources{allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourceCPU: resource.MustParse("4")}}
	c := &corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{*c}}}
	for _, tt := range []struct {
		resource, divisor, want string
	}{
		{"limits.memory", "", "134217728"},
		{"limits.memory", "1Mi", "128"},
		{"limits.cpu", "", "4"}, // no limit: the node's allocatable
		{"requests.cpu", "", "1"},
		{"requests.cpu", "1m", "250"},
		{"requests.memory", "", "0"},
	} {
		ref := &corev1.ResourceFieldSelector{Resource: tt.resource}
		if tt.divisor != "" {
			ref.Divisor = resource.MustParse(tt.divisor)
		}
		got, err := s.resourceValue(pod, c, ref)
		if err != nil || got != tt.want {
			t.Errorf("%s / %q = %q, %v; want %s", tt.resource, tt.divisor, got, err, tt.want)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-api", Namespace: "ns"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9", Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"K": "from-cm", "LEVEL": "debug"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "ns"}, Data: map[string][]byte{"token": []byte("s3cret")}},
	)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-1", Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		Env: []corev1.EnvVar{
			{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "LEVEL"}}},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "token"}}},
			{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "none"}, Key: "k", Optional: ptr.To(true)}}},
			{Name: "GREETING", Value: "$(NAME) of $(APP)"},
			{Name: "PATH", Value: "/bin"}, // overrides the image's
		},
	}
	env, err := envSources{client: client}.containerEnv(context.Background(), pod, c, []string{"PATH=/usr/bin", "IMAGE=1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"PATH=/bin", "IMAGE=1", "KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443",
		"KUBERNETES_SERVICE_PORT_HTTPS=443", "KUBERNETES_PORT=tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR=10.0.0.1",
		"WEB_API_SERVICE_HOST=10.0.0.9", "WEB_API_SERVICE_PORT_HTTP=80",
		"CM_K=from-cm", "CM_LEVEL=debug", "NAME=p-1", "APP=web", "LEVEL=debug", "TOKEN=s3cret", "OPTIONAL=", "GREETING=p-1 of web"} {
		if !slices.Contains(env, kv) {
			t.Errorf("environment lacks %s: %v", kv, env)
		}
	}
	if slices.Contains(env, "PATH=/usr/bin") {
		t.Errorf("the image's PATH was not overridden: %v", env)
	}

	pod.Spec.EnableServiceLinks = ptr.To(false)
	env, err = envSources{client: client}.containerEnv(context.Background(), pod, &corev1.Container{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(env, "WEB_API_SERVICE_HOST=10.0.0.9") || !slices.Contains(env, "KUBERNETES_SERVICE_HOST=10.0.0.1") {
		t.Errorf("enableServiceLinks false: want the kubernetes Service only, got %v", env)
	}

	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "nope"}}}}
	c.EnvFrom = nil
	if _, err := (envSources{client: client}).containerEnv(context.Background(), pod, c, nil); err == nil {
		t.Error("a missing required key gave no error")
	}
}
