package integration_test

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// prometheus is who may reach /metrics, as manifests/README.md documents:
// pods labelled as the Prometheus Operator labels Prometheus, in namespace
// monitoring. (Which ServiceAccount may read it is RBAC's business:
// TestTheMetricsAreServedToPrometheusOnly.)
var prometheus = []networkingv1.NetworkPolicyPeer{{
	NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}},
	PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}},
}}

// Each operator's NetworkPolicy selects its pods, restricts their ingress
// (and not their egress), and admits exactly the container ports its
// Services reach: the webhook's from anywhere (a NetworkPolicy cannot name
// the API server, see pod-terminator/README.md), with a commented rule that
// admits it from the API server's addresses only, ready to replace it;
// https-metrics (/metrics over HTTPS) from Prometheus only; the http port
// (/healthz, /readyz) admits no pod, since the kubelet's probes come from
// the node, which NetworkPolicies always let through. Ports are resolved by name or number
// against the Deployment's container ports, and those against the
// operator's -*-addr arguments: a port renamed or renumbered in one file
// only fails here. (No network plugin runs on the test control plane, so
// enforcement itself is not tested.)
func TestTheNetworkPoliciesAdmitTheServicesPortsOnly(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			objs := objects(t, kustomize(t, filepath.Join(manifests, op.name)))
			var d appsv1.Deployment
			only(t, objs, "Deployment", &d)
			var np networkingv1.NetworkPolicy
			only(t, objs, "NetworkPolicy", &np)
			var services []corev1.Service
			for _, o := range objs {
				if o.GetKind() != "Service" {
					continue
				}
				var svc corev1.Service
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc); err != nil {
					t.Fatal(err)
				}
				services = append(services, svc)
			}
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("got %d containers, want 1", len(d.Spec.Template.Spec.Containers))
			}
			c := d.Spec.Template.Spec.Containers[0]

			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				t.Errorf("the NetworkPolicy selects %v, want the operator's pods %v only", sel, d.Spec.Template.Labels)
			}
			if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
				t.Errorf("got policy types %v, want Ingress only", np.Spec.PolicyTypes)
			}

			// admitted: by container port name, the sources admitted there;
			// webhookRule: the rule admitting the webhook port.
			admitted := map[string][]networkingv1.NetworkPolicyPeer{}
			var webhookRule *networkingv1.NetworkPolicyIngressRule
			for i, rule := range np.Spec.Ingress {
				if len(rule.Ports) == 0 {
					t.Errorf("ingress rule %d admits every port, want named ports", i)
				}
				for _, p := range rule.Ports {
					if p.Port == nil || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP || p.EndPort != nil {
						t.Errorf("ingress rule %d: got port %+v, want one TCP port", i, p)
						continue
					}
					cp, ok := containerPort(c, *p.Port)
					if !ok {
						t.Errorf("ingress rule %d admits port %s, which is no container port of the Deployment (%+v)", i, p.Port, c.Ports)
						continue
					}
					if _, dup := admitted[cp.Name]; dup {
						t.Errorf("port %s is admitted by two rules", cp.Name)
					}
					admitted[cp.Name] = rule.From
					if cp.Name == "webhook" {
						webhookRule = &np.Spec.Ingress[i]
					}
				}
			}

			reached := map[string]bool{}
			for _, svc := range services {
				for _, sp := range svc.Spec.Ports {
					cp, ok := containerPort(c, sp.TargetPort)
					if !ok {
						t.Errorf("Service %s port %s targets %s, which is no container port of the Deployment (%+v)", svc.Name, sp.Name, sp.TargetPort.String(), c.Ports)
						continue
					}
					reached[cp.Name] = true
					from, ok := admitted[cp.Name]
					switch {
					case !ok:
						t.Errorf("Service %s port %s reaches container port %s, which the NetworkPolicy does not admit", svc.Name, sp.Name, cp.Name)
					case sp.Name == "webhook" && len(from) != 0:
						t.Errorf("the webhook port is admitted from %+v only, want from anywhere: the API server is not a pod", from)
					case sp.Name == "https-metrics" && !reflect.DeepEqual(from, prometheus):
						t.Errorf("the https-metrics port is admitted from %+v, want %+v only", from, prometheus)
					case sp.Name != "webhook" && sp.Name != "https-metrics":
						t.Errorf("Service %s has port %s, want webhook or https-metrics only (or say here who may reach it)", svc.Name, sp.Name)
					}
				}
			}
			for name := range admitted {
				if !reached[name] {
					t.Errorf("the NetworkPolicy admits container port %s, which no Service reaches", name)
				}
			}
			if webhookRule != nil {
				checkAPIServerOnlyRule(t, filepath.Join(manifests, op.name, "network_policy.yaml"), *webhookRule)
			}

			// The container ports are those the operator listens on.
			for _, arg := range c.Args {
				flag, value, ok := strings.Cut(arg, "=")
				if !ok || !strings.HasSuffix(flag, "-addr") {
					continue
				}
				_, port, err := net.SplitHostPort(value)
				if err != nil {
					t.Errorf("argument %s: %v", arg, err)
					continue
				}
				n, err := strconv.Atoi(port)
				if err != nil || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return int(p.ContainerPort) == n }) {
					t.Errorf("argument %s listens on port %s, which is no container port (%+v)", arg, port, c.Ports)
				}
			}
		})
	}
}

// checkAPIServerOnlyRule checks the commented rule of the NetworkPolicy
// file that admits the webhook port from the API server's addresses only
// (a "# - from:" line and the "#   " lines after it): uncommented, it is a
// drop-in replacement for open, the rule admitting the webhook port from
// anywhere: the same ports, from ipBlocks only.
func checkAPIServerOnlyRule(t *testing.T, file string, open networkingv1.NetworkPolicyIngressRule) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "# - from:") })
	if start < 0 {
		t.Errorf("%s: got no commented rule admitting the webhook port from the API server only (a \"# - from:\" line), want one", file)
		return
	}
	var block []string
	for i, l := range lines[start:] {
		l = strings.TrimLeft(l, " ")
		if i > 0 && !strings.HasPrefix(l, "#   ") {
			break
		}
		block = append(block, strings.TrimPrefix(l, "# "))
	}
	uncommented := strings.Join(block, "\n")
	var rules []networkingv1.NetworkPolicyIngressRule
	if err := yaml.UnmarshalStrict([]byte(uncommented), &rules); err != nil {
		t.Errorf("%s: the commented rule is not an ingress rule: %v\n%s", file, err, uncommented)
		return
	}
	if len(rules) != 1 {
		t.Fatalf("%s: got %d commented rules, want 1", file, len(rules))
	}
	rule := rules[0]
	if !reflect.DeepEqual(rule.Ports, open.Ports) {
		t.Errorf("%s: the commented rule admits ports %+v, want those of the rule it replaces, %+v", file, rule.Ports, open.Ports)
	}
	if len(rule.From) == 0 {
		t.Errorf("%s: the commented rule admits every source, want the API server's addresses only", file)
	}
	for _, peer := range rule.From {
		if peer.IPBlock == nil || peer.PodSelector != nil || peer.NamespaceSelector != nil || len(peer.IPBlock.Except) > 0 {
			t.Errorf("%s: the commented rule admits %+v, want an ipBlock of the API server's addresses (it is not a pod)", file, peer)
			continue
		}
		if _, _, err := net.ParseCIDR(peer.IPBlock.CIDR); err != nil {
			t.Errorf("%s: the commented rule's ipBlock: %v", file, err)
		}
	}
}

// containerPort returns the port of c that p names: by name when p is a
// string, by number otherwise, as Services and NetworkPolicies resolve it.
func containerPort(c corev1.Container, p intstr.IntOrString) (corev1.ContainerPort, bool) {
	i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool {
		if p.Type == intstr.String {
			return cp.Name == p.StrVal
		}
		return cp.ContainerPort == p.IntVal
	})
	if i < 0 || (c.Ports[i].Protocol != "" && c.Ports[i].Protocol != corev1.ProtocolTCP) {
		return corev1.ContainerPort{}, false
	}
	return c.Ports[i], true
}
