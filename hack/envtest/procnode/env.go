package procnode

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// envSources is what a container's environment is read from besides the
// pod: the Services of its namespace, ConfigMaps and Secrets, and the
// node's allocatable resources (a resourceFieldRef to a limit the
// container does not set reads the node's).
type envSources struct {
	client      kubernetes.Interface
	allocatable corev1.ResourceList
}

// containerEnv builds the environment the kubelet gives a container, in
// its order: the image's, the Services' (the kubernetes Service's always,
// the namespace's when enableServiceLinks is not false), envFrom, then env,
// each value with $(NAME) references expanded against what comes before.
func (s envSources) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, image []string) ([]string, error) {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range image {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	services, err := s.serviceEnv(ctx, pod)
	if err != nil {
		return nil, err
	}
	for _, kv := range services {
		set(kv[0], kv[1])
	}
	for _, from := range c.EnvFrom {
		data, err := s.envFrom(ctx, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		v := expand(e.Value, vals)
		if e.ValueFrom != nil {
			if v, err = s.valueFrom(ctx, pod, c, e.ValueFrom); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		set(e.Name, v)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}

// expand replaces $(NAME) with NAME's value where NAME is defined, and
// $$ with $, as the kubelet expands env values, command and args.
func expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// serviceEnv returns the Docker-link variables of the kubernetes Service
// and, unless the pod turns service links off, of the Services of its
// namespace, as name-value pairs.
func (s envSources) serviceEnv(ctx context.Context, pod *corev1.Pod) ([][2]string, error) {
	var services []corev1.Service
	master, err := s.client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("could not read the kubernetes Service: %w", err)
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		list, err := s.client.CoreV1().Services(pod.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("could not list the Services of %s: %w", pod.Namespace, err)
		}
		for _, svc := range list.Items {
			if pod.Namespace != metav1.NamespaceDefault || svc.Name != "kubernetes" {
				services = append(services, svc)
			}
		}
	}
	services = append(services, *master)
	var env [][2]string
	for _, svc := range services {
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
			continue
		}
		prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
		ip := svc.Spec.ClusterIP
		first := svc.Spec.Ports[0]
		env = append(env, [2]string{prefix + "_SERVICE_HOST", ip}, [2]string{prefix + "_SERVICE_PORT", strconv.Itoa(int(first.Port))})
		for _, p := range svc.Spec.Ports {
			if p.Name != "" {
				env = append(env, [2]string{prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), strconv.Itoa(int(p.Port))})
			}
		}
		env = append(env, [2]string{prefix + "_PORT", fmt.Sprintf("%s://%s:%d", strings.ToLower(string(first.Protocol)), ip, first.Port)})
		for _, p := range svc.Spec.Ports {
			proto := strings.ToUpper(string(p.Protocol))
			base := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, proto)
			env = append(env,
				[2]string{base, fmt.Sprintf("%s://%s:%d", strings.ToLower(proto), ip, p.Port)},
				[2]string{base + "_PROTO", strings.ToLower(proto)},
				[2]string{base + "_PORT", strconv.Itoa(int(p.Port))},
				[2]string{base + "_ADDR", ip})
		}
	}
	return env, nil
}

func (s envSources) envFrom(ctx context.Context, namespace string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := s.client.CoreV1().ConfigMaps(namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				return nil, nil
			}
			return nil, fmt.Errorf("envFrom configMapRef %s: %w", from.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		sec, err := s.client.CoreV1().Secrets(namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
				return nil, nil
			}
			return nil, fmt.Errorf("envFrom secretRef %s: %w", from.SecretRef.Name, err)
		}
		data := make(map[string]string, len(sec.Data))
		for k, v := range sec.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

func (s envSources) valueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource) (string, error) {
	switch {
	case from.FieldRef != nil:
		return fieldValue(pod, from.FieldRef.FieldPath)
	case from.ResourceFieldRef != nil:
		return s.resourceValue(pod, c, from.ResourceFieldRef)
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := s.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := cm.Data[ref.Key]; ok {
				return v, nil
			}
			err = fmt.Errorf("key %s not in ConfigMap %s", ref.Key, ref.Name)
		}
		if ref.Optional != nil && *ref.Optional {
			return "", nil
		}
		return "", err
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		sec, err := s.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := sec.Data[ref.Key]; ok {
				return string(v), nil
			}
			err = fmt.Errorf("key %s not in Secret %s", ref.Key, ref.Name)
		}
		if ref.Optional != nil && *ref.Optional {
			return "", nil
		}
		return "", err
	}
	return "", fmt.Errorf("%w: an env valueFrom this node does not know", ErrUnsupported)
}

// fieldValue is the downward API's value of a pod field.
func fieldValue(pod *corev1.Pod, field string) (string, error) {
	if key, ok := strings.CutPrefix(field, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(key, "']")], nil
	}
	if key, ok := strings.CutPrefix(field, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(key, "']")], nil
	}
	switch field {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		return joinIPs(pod.Status.HostIPs), nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		ips := make([]string, 0, len(pod.Status.PodIPs))
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("%w: fieldRef %s", ErrUnsupported, field)
}

func joinIPs(ips []corev1.HostIP) string {
	s := make([]string, 0, len(ips))
	for _, ip := range ips {
		s = append(s, ip.IP)
	}
	return strings.Join(s, ",")
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resourceValue is the downward API's value of a container resource, in
// units of the divisor, rounded up; a limit the container does not set is
// the node's allocatable amount, as the kubelet reports it.
func (s envSources) resourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		target = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				target = &pod.Spec.Containers[i]
			}
		}
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %s", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("%w: resourceFieldRef %s", ErrUnsupported, ref.Resource)
	}
	var q resource.Quantity
	var set bool
	switch kind {
	case "limits":
		q, set = target.Resources.Limits[corev1.ResourceName(name)]
		if !set {
			q, set = s.allocatable[corev1.ResourceName(name)]
		}
	case "requests":
		q, set = target.Resources.Requests[corev1.ResourceName(name)]
	default:
		return "", fmt.Errorf("%w: resourceFieldRef %s", ErrUnsupported, ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if !set {
		q = resource.Quantity{}
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}
