package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Each operator's kustomization renders its namespace, RBAC and admission
// policies, Deployment, Services, NetworkPolicy and webhook, and the CRDs of
// its own API group only: undeploying one operator must never delete
// another's CRDs. Everything but the CRDs carries
// app.kubernetes.io/name=<operator>, which is how undeploy finds the
// operator's objects (its own namespaces included), and is in the
// operator's namespace unless listed as elsewhere.
func TestEachOperatorRendersWhatItNeedsAndNothingElse(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			objs := objects(t, kustomize(t, filepath.Join(manifests, op.name)))
			var kinds []string
			group := op.group
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
				switch o.GetKind() {
				case "CustomResourceDefinition":
					var crd apiextensionsv1.CustomResourceDefinition
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
						t.Fatal(err)
					}
					if group == "" {
						group = crd.Spec.Group
						for _, other := range operators {
							if other.group == group {
								t.Errorf("got CRD %s of group %s, the %s operator's", crd.Name, group, other.name)
							}
						}
					}
					if crd.Spec.Group != group {
						t.Errorf("got CRD %s of group %s, want %s's only", crd.Name, crd.Spec.Group, group)
					}
				case "Namespace":
					if o.GetName() != namespaceOf(op.name) && !slices.Contains(op.namespaces, o.GetName()) {
						t.Errorf("got namespace %s, want %s", o.GetName(), strings.Join(append([]string{namespaceOf(op.name)}, op.namespaces...), " or "))
					}
					if o.GetLabels()["app.kubernetes.io/name"] != op.name {
						t.Errorf("namespace %s has app.kubernetes.io/name=%q, want %q (make undeploy selects by it)", o.GetName(), o.GetLabels()["app.kubernetes.io/name"], op.name)
					}
				default:
					if got := o.GetLabels()["app.kubernetes.io/name"]; got != op.name {
						t.Errorf("%s %s has app.kubernetes.io/name=%q, want %q (make undeploy selects by it)", o.GetKind(), o.GetName(), got, op.name)
					}
					want := []string{namespaceOf(op.name)}
					if ns, ok := op.elsewhere[o.GetKind()+"/"+o.GetName()]; ok {
						want = ns
					}
					if ns := o.GetNamespace(); ns != "" && !slices.Contains(want, ns) {
						t.Errorf("%s %s is in namespace %s, want %s", o.GetKind(), o.GetName(), ns, strings.Join(want, " or "))
					}
				}
				if got := o.GetLabels()["app.kubernetes.io/part-of"]; got != "kooper" {
					t.Errorf("%s %s has app.kubernetes.io/part-of=%q, want kooper", o.GetKind(), o.GetName(), got)
				}
			}
			slices.Sort(kinds)
			switch {
			case op.kinds != nil:
				if !slices.Equal(kinds, op.kinds) {
					t.Errorf("got kinds %q\nwant %q", kinds, op.kinds)
				}
			default:
				for _, k := range required {
					if !slices.Contains(kinds, k) {
						t.Errorf("got kinds %q, want a %s among them", kinds, k)
					}
				}
				for _, k := range kinds {
					if !slices.Contains(allowed, k) {
						t.Errorf("got a %s: want only kinds of %q", k, allowed)
					}
				}
			}
		})
	}
}

// The Deployments run two leader-elected replicas with probes on the health
// endpoints, under the restricted pod security context, with resources, and
// the image of the kustomization's images: entry.
func TestTheDeploymentsAreHardened(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			var d appsv1.Deployment
			only(t, objects(t, kustomize(t, filepath.Join(manifests, op.name))), "Deployment", &d)
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
				t.Errorf("got replicas %v, want 2", d.Spec.Replicas)
			}
			pod := d.Spec.Template.Spec
			if pod.ServiceAccountName != op.name {
				t.Errorf("got service account %q, want %s", pod.ServiceAccountName, op.name)
			}
			psc := pod.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
				psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("got pod security context %+v, want runAsNonRoot and RuntimeDefault seccomp", psc)
			}
			if len(pod.Containers) != 1 {
				t.Fatalf("got %d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			if want := "ghcr.io/kooperkit/" + op.name + ":latest"; c.Image != want {
				t.Errorf("got image %q, want %q", c.Image, want)
			}
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Privileged != nil && *sc.Privileged ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("got container security context %+v, want no privilege escalation, a read-only root, all capabilities dropped", sc)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("got resources %+v, want cpu and memory requests and a memory limit", c.Resources)
			}
			for _, arg := range c.Args {
				if strings.HasPrefix(arg, "-leader-elect=") && arg != "-leader-elect=true" {
					t.Errorf("got %s in a 2-replica Deployment, want leader election on", arg)
				}
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
				if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
					t.Errorf("got %s probe %+v, want GET %s on port http", p.name, p.probe, p.path)
				}
			}
			if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" }) {
				t.Errorf("got ports %+v, want one named http (the probes use it)", c.Ports)
			}
		})
	}
}

// Each operator has a Service whose port named https-metrics reaches
// /metrics on every replica: the container port https-metrics, where the
// operator's -metrics-secure-addr listens.
func TestTheMetricsServiceReachesTheReplicas(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			objs := objects(t, kustomize(t, filepath.Join(manifests, op.name)))
			var d appsv1.Deployment
			only(t, objs, "Deployment", &d)
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("got %d containers, want 1", len(d.Spec.Template.Spec.Containers))
			}
			c := d.Spec.Template.Spec.Containers[0]
			i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "https-metrics" })
			if i < 0 {
				t.Fatalf("got ports %+v, want one named https-metrics", c.Ports)
			}
			if want := fmt.Sprintf("-metrics-secure-addr=:%d", c.Ports[i].ContainerPort); !slices.Contains(c.Args, want) {
				t.Errorf("got args %q, want %s: /metrics over HTTPS on the port https-metrics", c.Args, want)
			}
			found := false
			for _, o := range objs {
				var svc corev1.Service
				if o.GetKind() != "Service" {
					continue
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc); err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "https-metrics" })
				if i < 0 {
					continue
				}
				found = true
				if got := svc.Spec.Ports[i].TargetPort.String(); got != "https-metrics" {
					t.Errorf("Service %s: got target port %s, want https-metrics (where the operator serves /metrics)", svc.Name, got)
				}
				if svc.Labels["app.kubernetes.io/component"] != "metrics" {
					t.Errorf("Service %s: got labels %v, want app.kubernetes.io/component=metrics (a ServiceMonitor selects it)", svc.Name, svc.Labels)
				}
				for k, v := range svc.Spec.Selector {
					if d.Spec.Template.Labels[k] != v {
						t.Errorf("Service %s: got selector %v, want it to select the pods %v", svc.Name, svc.Spec.Selector, d.Spec.Template.Labels)
					}
				}
				if len(svc.Spec.Selector) == 0 {
					t.Errorf("Service %s has no selector", svc.Name)
				}
			}
			if !found {
				t.Error("no Service has a port named https-metrics")
			}
		})
	}
}

// make deploy IMG=... sets the image through kustomize images: in an overlay
// (deploy.sh render shows what deploy.sh deploy applies): the image changes,
// nothing else does.
func TestAnImageOverrideChangesTheImageOnly(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			base := render(t, op.name, "")
			if direct := kustomize(t, filepath.Join(manifests, op.name)); base != direct {
				t.Fatalf("deploy.sh render without an image differs from kubectl kustomize:\n%s\nwant\n%s", base, direct)
			}
			defaultImage := "image: ghcr.io/kooperkit/" + op.name + ":latest"
			if strings.Count(base, defaultImage) != 1 {
				t.Fatalf("the default %q is not rendered once:\n%s", defaultImage, base)
			}
			for img, want := range map[string]string{
				"registry.example:5000/team/" + op.name + ":v1.2.3": "registry.example:5000/team/" + op.name + ":v1.2.3",
				"registry.example/" + op.name + "@" + digest:        "registry.example/" + op.name + "@" + digest,
				"example/" + op.name:                                "example/" + op.name + ":latest", // no tag: latest, as docker says
			} {
				got := render(t, op.name, img)
				if wantAll := strings.Replace(base, defaultImage, "image: "+want, 1); got != wantAll {
					t.Errorf("IMG=%s: got\n%s\nwant the defaults with image %s", img, got, want)
				}
			}
		})
	}
}

// The API server accepts each operator's manifests: a server-side dry run,
// so admission (Pod Security "restricted" warns about the Deployment's pods)
// and validation run, and nothing is created. The namespace is created first:
// a dry run cannot see a namespace created in the same apply (an operator
// whose children live in a namespace of their own renders two).
func TestTheManifestsApplyOnTheServer(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			for _, o := range objects(t, kustomize(t, filepath.Join(manifests, op.name))) {
				if o.GetKind() != "Namespace" {
					continue
				}
				b, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(t.TempDir(), o.GetName()+".yaml")
				if err := os.WriteFile(file, b, 0o600); err != nil {
					t.Fatal(err)
				}
				kubectl(t, "apply", "-f", file)
			}
			out := kubectl(t, "apply", "--dry-run=server", "-k", filepath.Join(manifests, op.name))
			if strings.Contains(out, "Warning") {
				t.Errorf("kubectl apply warned:\n%s", out)
			}
			if !strings.Contains(out, "deployment.apps/"+op.name+" created (server dry run)") {
				t.Errorf("got\n%s\nwant the Deployment created (server dry run)", out)
			}
		})
	}
	for _, op := range operators {
		if got := kubectl(t, "get", "deployments", "-n", namespaceOf(op.name), "-o", "name"); strings.TrimSpace(got) != "" {
			t.Errorf("got deployments %s after a dry run, want none", got)
		}
	}
}

// Every kustomization in manifests/ renders, and lists every manifest of its
// directory: a file left out would silently not be deployed.
func TestEveryKustomizationListsItsDirectoryAndRenders(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(manifests, "*", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join(manifests, "*", "*", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, more...)
	if len(dirs) < 6 {
		t.Fatalf("got kustomizations %q, want the operators', their RBAC's and the CRDs'", dirs)
	}
	for _, k := range dirs {
		dir := filepath.Dir(k)
		b, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		var kustomization struct {
			Resources []string `json:"resources"`
			Patches   []struct {
				Path string `json:"path"`
			} `json:"patches"`
		}
		if err := yaml.Unmarshal(b, &kustomization); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		listed := slices.Clone(kustomization.Resources)
		for _, p := range kustomization.Patches {
			listed = append(listed, p.Path)
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(listed, name) {
				t.Errorf("%s does not list %s, as a resource or a patch", k, name)
			}
		}
		kustomize(t, dir)
	}
}

// Each operator runs in a namespace of its own, which no other operator's
// kustomization renders: a Role there (Leases, Secrets) reaches no other
// operator's objects, and undeploying one operator deletes its namespace
// only. Pod Security enforces the restricted profile in each.
func TestEachOperatorHasItsOwnNamespace(t *testing.T) {
	owner := map[string]string{}
	for _, op := range operators {
		own := false
		for _, o := range objects(t, kustomize(t, filepath.Join(manifests, op.name))) {
			if o.GetKind() != "Namespace" {
				continue
			}
			if other, ok := owner[o.GetName()]; ok {
				t.Errorf("namespace %s is rendered by %s and %s", o.GetName(), other, op.name)
			}
			owner[o.GetName()] = op.name
			own = own || o.GetName() == namespaceOf(op.name)
			if got := o.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
				t.Errorf("namespace %s enforces Pod Security %q, want restricted", o.GetName(), got)
			}
		}
		if !own {
			t.Errorf("%s renders no namespace %s", op.name, namespaceOf(op.name))
		}
	}
}
