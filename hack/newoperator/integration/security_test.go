package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/worktree"
)

// served is the namespace a namespaced scaffold serves by default.
const served = "default"

// What make new-operator writes for a custom resource owning each kind
// gives a stolen token of the operator no more than the objects its custom
// resources control. The RBAC and admission policy it writes are applied to
// a real API server, and the operator's real ServiceAccount token (the
// TokenRequest API) tries the takeovers a security review found, and
// variants: each is refused, while a write the operator makes is allowed.
func TestAStolenTokenOfAScaffoldTakesNothingOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	root := worktree.Root(t)
	ctx := context.Background()
	cluster, err := envtest.Start(ctx, envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	newoperator := filepath.Join(t.TempDir(), "newoperator")
	if out, err := exec.Command("go", "build", "-o", newoperator, filepath.Join(root, "hack/newoperator")).CombinedOutput(); err != nil {
		t.Fatalf("go build ./hack/newoperator: %v\n%s", err, out)
	}

	for _, tt := range []struct {
		kind  string
		owns  string
		check func(t *testing.T, s *scaffold)
	}{
		{kind: "ConfigMap", check: checkConfigMaps},
		{kind: "Secret", check: checkSecrets},
		{kind: "ServiceAccount", check: checkServiceAccounts},
		{kind: "Deployment", check: checkDeployments},
		{kind: "Role", check: checkRoles},
		{kind: "RoleBinding", owns: "Role,RoleBinding", check: checkRoleBindings},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			owns := tt.owns
			if owns == "" {
				owns = tt.kind
			}
			s := newScaffold(t, cluster, admin, newoperator, root, owns)
			tt.check(t, s)
		})
	}
}

// scaffold is the RBAC of one scaffolded operator, applied, and its token.
type scaffold struct {
	name, group string
	admin       kubernetes.Interface
	token       kubernetes.Interface
	kubeconfig  string // the token's, for kubectl auth can-i
	kubectl     string
	// owner is a controller owner reference to a custom resource of the
	// operator's kind (no such object: without a controller manager,
	// nothing collects what it owns).
	owner []metav1.OwnerReference
	// namespace is the operator's own, kooper-<name>: its ServiceAccount
	// and Lease are there.
	namespace string
}

func newScaffold(t *testing.T, cluster *envtest.Cluster, admin kubernetes.Interface, newoperator, root, owns string) *scaffold {
	t.Helper()
	ctx := context.Background()
	short := fmt.Sprintf("sec%s%d", strings.ToLower(strings.ReplaceAll(owns, ",", "")), os.Getpid()%100000)
	name := "sec-" + strings.ToLower(strings.ReplaceAll(owns, ",", ""))
	s := &scaffold{name: name, group: short + ".example.com", namespace: "kooper-" + name, admin: admin, kubectl: filepath.Join(cluster.BinDir(), envtest.BinKubectl)}
	dir := t.TempDir()
	cmd := exec.Command(newoperator, "-root", root, "-name", name, "-group", s.group, "-kind", "Thing", "-scope", "Namespaced", "-owns", owns, "-rbac-only", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("newoperator -rbac-only: %v\n%s", err, out)
	}
	// Nothing is deleted afterwards: the cluster is the test's own.
	s.run(t, cluster.KubeconfigPath(), "apply", "-k", dir)

	tr, err := admin.CoreV1().ServiceAccounts(s.namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.Config()
	tokenCfg := &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}, BearerToken: tr.Status.Token}
	s.token = kubernetes.NewForConfigOrDie(tokenCfg)
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, cfg.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	s.kubeconfig = filepath.Join(dir, "token.kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]\n"+
		"users: [{name: u, user: {token: %q}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", cfg.Host, ca, tr.Status.Token)
	if err := os.WriteFile(s.kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	s.owner = []metav1.OwnerReference{{APIVersion: s.group + "/v1alpha1", Kind: "Thing", Name: "demo", UID: types.UID("uid-" + name), Controller: ptr.To(true)}}
	return s
}

// run runs kubectl with the kubeconfig and fails the test if it fails.
func (s *scaffold) run(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := exec.Command(s.kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// cannot fails the test unless `kubectl auth can-i` says no to the token
// for args (a verb, a resource, and -n or -A).
func (s *scaffold) cannot(t *testing.T, args ...string) {
	t.Helper()
	out, _ := exec.Command(s.kubectl, append([]string{"--kubeconfig", s.kubeconfig, "auth", "can-i"}, args...)...).CombinedOutput()
	if got := strings.TrimSpace(string(out)); got != "no" {
		t.Errorf("kubectl auth can-i %s as %s: %q, want no", strings.Join(args, " "), s.name, got)
	}
}

// refused fails the test unless err is the API server's refusal of what
// the token tried.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want it refused (403)", what, err)
	}
}

// byPolicy fails the test unless err is the refusal of the scaffold's
// admission policy, not of RBAC: the write reached the policy.
func (s *scaffold) byPolicy(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'kooper-"+s.name+"-") {
		t.Errorf("%s: got %v, want it refused by the admission policy", what, err)
	}
}

func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: got %v, want it allowed (the operator's own write)", what, err)
	}
}

// waitEnforced waits until write, which the policy refuses, is refused: a
// new policy takes a moment to be enforced, and RBAC allows the write.
func waitEnforced(t *testing.T, s *scaffold, write func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := write()
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admission policy of %s is not enforced after 30s: the last write got %v", s.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// common checks what holds for every owned kind: no cluster-wide read or
// write, no system namespace nor the operator's own, no Secret outside the
// served namespaces.
func (s *scaffold) common(t *testing.T, resource string) {
	t.Helper()
	s.cannot(t, "list", resource, "-A")
	s.cannot(t, "create", resource, "-n", "kube-system")
	s.cannot(t, "create", resource, "-n", s.namespace)
	s.cannot(t, "create", resource, "-n", "elsewhere")
	s.cannot(t, "list", "secrets", "-A")
	s.cannot(t, "get", "secrets", "-n", "kube-system")
	s.cannot(t, "get", "secrets", "-n", s.namespace)
	_, err := s.token.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	refused(t, "listing the Secrets of kube-system", err)
}

func meta(name, ns string, owner []metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owner}
}

func checkConfigMaps(t *testing.T, s *scaffold) {
	ctx := context.Background()
	s.common(t, "configmaps")
	_, err := s.token.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	refused(t, "listing every ConfigMap", err)
	awsAuth := &corev1.ConfigMap{ObjectMeta: meta("aws-auth", "kube-system", s.owner), Data: map[string]string{
		"mapRoles": "- rolearn: arn:aws:iam::1:role/x\n  username: x\n  groups: [system:masters]\n",
	}}
	_, err = s.token.CoreV1().ConfigMaps("kube-system").Create(ctx, awsAuth, metav1.CreateOptions{})
	refused(t, "creating kube-system/aws-auth", err)

	cms := s.token.CoreV1().ConfigMaps(served)
	notOwned := &corev1.ConfigMap{ObjectMeta: meta(s.name+"-not-owned", served, nil)}
	waitEnforced(t, s, func() error { _, err := cms.Create(ctx, notOwned, metav1.CreateOptions{}); return err })
	_, err = cms.Create(ctx, notOwned, metav1.CreateOptions{})
	s.byPolicy(t, "creating a ConfigMap no Thing controls in a served namespace", err)
	theirs, err := s.admin.CoreV1().ConfigMaps(served).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta(s.name+"-theirs", served, nil), Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.admin.CoreV1().ConfigMaps(served).Delete(context.Background(), theirs.Name, metav1.DeleteOptions{})
	})
	// The operator writes with server-side apply: it may patch, not update.
	s.cannot(t, "update", "configmaps", "-n", served)
	patch := func(name string, p any) error {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cms.Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	type m = map[string]any
	s.byPolicy(t, "patching a ConfigMap it does not own", patch(theirs.Name, m{"data": m{"a": "changed"}}))
	s.byPolicy(t, "adopting a ConfigMap (an owner reference added by a patch)", patch(theirs.Name, m{"metadata": m{"ownerReferences": s.owner}}))
	applied := corev1ac.ConfigMap(theirs.Name, served).WithOwnerReferences(metav1ac.OwnerReference().
		WithAPIVersion(s.owner[0].APIVersion).WithKind(s.owner[0].Kind).WithName(s.owner[0].Name).WithUID(s.owner[0].UID).WithController(true))
	_, err = cms.Apply(ctx, applied, metav1.ApplyOptions{FieldManager: s.name, Force: true})
	s.byPolicy(t, "adopting a ConfigMap by a forced server-side apply", err)

	mine, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta(s.name+"-mine", served, s.owner)}, metav1.CreateOptions{})
	allowed(t, "creating a ConfigMap a Thing controls", err)
	if err == nil {
		t.Cleanup(func() {
			_ = s.admin.CoreV1().ConfigMaps(served).Delete(context.Background(), mine.Name, metav1.DeleteOptions{})
		})
		s.byPolicy(t, "adding a finalizer", patch(mine.Name, m{"metadata": m{"finalizers": []string{"example.com/hold"}}}))
		s.byPolicy(t, "dropping the owner reference", patch(mine.Name, m{"metadata": m{"ownerReferences": nil}}))
		allowed(t, "patching the data of a ConfigMap a Thing controls", patch(mine.Name, m{"data": m{"a": "b"}}))
	}
}

func checkSecrets(t *testing.T, s *scaffold) {
	ctx := context.Background()
	s.common(t, "secrets")
	tokenSecret := func(ns, account string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: s.name + "-token", Namespace: ns, OwnerReferences: s.owner,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: account}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
	}
	_, err := s.token.CoreV1().Secrets("kube-system").Create(ctx, tokenSecret("kube-system", "generic-garbage-collector"), metav1.CreateOptions{})
	refused(t, "minting a token Secret for kube-system/generic-garbage-collector", err)
	secrets := s.token.CoreV1().Secrets(served)
	notOwned := &corev1.Secret{ObjectMeta: meta(s.name+"-not-owned", served, nil)}
	waitEnforced(t, s, func() error { _, err := secrets.Create(ctx, notOwned, metav1.CreateOptions{}); return err })
	_, err = secrets.Create(ctx, notOwned, metav1.CreateOptions{})
	s.byPolicy(t, "creating a Secret no Thing controls", err)
	_, err = secrets.Create(ctx, tokenSecret(served, "default"), metav1.CreateOptions{})
	s.byPolicy(t, "minting a token Secret in a served namespace", err)
	mine, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: meta(s.name+"-mine", served, s.owner), Type: corev1.SecretTypeOpaque}, metav1.CreateOptions{})
	allowed(t, "creating an Opaque Secret a Thing controls", err)
	if err == nil {
		t.Cleanup(func() {
			_ = s.admin.CoreV1().Secrets(served).Delete(context.Background(), mine.Name, metav1.DeleteOptions{})
		})
	}
}

func checkServiceAccounts(t *testing.T, s *scaffold) {
	ctx := context.Background()
	s.common(t, "serviceaccounts")
	s.cannot(t, "create", "serviceaccounts", "--subresource=token", "-n", served)
	_, err := s.token.CoreV1().ServiceAccounts(served).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	refused(t, "requesting a token of a ServiceAccount", err)
	accounts := s.token.CoreV1().ServiceAccounts(served)
	notOwned := &corev1.ServiceAccount{ObjectMeta: meta(s.name+"-not-owned", served, nil)}
	waitEnforced(t, s, func() error { _, err := accounts.Create(ctx, notOwned, metav1.CreateOptions{}); return err })
	_, err = accounts.Create(ctx, notOwned, metav1.CreateOptions{})
	s.byPolicy(t, "creating a ServiceAccount no Thing controls", err)
	mine, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta(s.name+"-mine", served, s.owner)}, metav1.CreateOptions{})
	allowed(t, "creating a ServiceAccount a Thing controls", err)
	if err == nil {
		t.Cleanup(func() {
			_ = s.admin.CoreV1().ServiceAccounts(served).Delete(context.Background(), mine.Name, metav1.DeleteOptions{})
		})
	}
}

// restrictedPod is a pod template at the restricted Pod Security level.
func restrictedPod() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}
}

func deployment(name, ns string, owner []metav1.OwnerReference, pod corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: meta(name, ns, owner), Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: pod,
	}}
}

func checkDeployments(t *testing.T, s *scaffold) {
	ctx := context.Background()
	s.common(t, "deployments")
	// What the review created: privileged, the host's PID namespace and
	// its root file system.
	hostile := restrictedPod()
	hostile.Spec.HostPID = true
	hostile.Spec.SecurityContext = nil
	hostile.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	hostile.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	hostile.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}
	_, err := s.token.AppsV1().Deployments("kube-system").Create(ctx, deployment(s.name+"-x", "kube-system", s.owner, hostile), metav1.CreateOptions{})
	refused(t, "creating a privileged, hostPID, hostPath / Deployment in kube-system", err)

	deployments := s.token.AppsV1().Deployments(served)
	waitEnforced(t, s, func() error {
		_, err := deployments.Create(ctx, deployment(s.name+"-not-owned", served, nil, restrictedPod()), metav1.CreateOptions{})
		return err
	})
	_, err = deployments.Create(ctx, deployment(s.name+"-hostile", served, s.owner, hostile), metav1.CreateOptions{})
	s.byPolicy(t, "creating that Deployment in a served namespace", err)
	for what, change := range map[string]func(*corev1.PodSpec){
		"hostNetwork": func(p *corev1.PodSpec) { p.HostNetwork = true },
		"root":        func(p *corev1.PodSpec) { p.SecurityContext.RunAsUser = ptr.To[int64](0) },
		"an added SYS_ADMIN": func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		},
		"a privileged init": func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "init", Image: "x", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
		},
		"no seccomp profile":      func(p *corev1.PodSpec) { p.SecurityContext.SeccompProfile = nil },
		"privilege escalation on": func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true) },
	} {
		pod := restrictedPod()
		change(&pod.Spec)
		_, err := deployments.Create(ctx, deployment(s.name+"-variant", served, s.owner, pod), metav1.CreateOptions{})
		s.byPolicy(t, "creating a Deployment whose pods have "+what, err)
	}
	mine, err := deployments.Create(ctx, deployment(s.name+"-mine", served, s.owner, restrictedPod()), metav1.CreateOptions{})
	allowed(t, "creating a restricted Deployment a Thing controls", err)
	if err == nil {
		t.Cleanup(func() {
			_ = s.admin.AppsV1().Deployments(served).Delete(context.Background(), mine.Name, metav1.DeleteOptions{})
		})
	}
}

// thingsRule is what the scaffold's Role grants: reading its own kind.
func (s *scaffold) thingsRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{s.group}, Resources: []string{"things"}, Verbs: []string{"list", "watch"}}
}

func checkRoles(t *testing.T, s *scaffold) {
	ctx := context.Background()
	s.common(t, "roles")
	roles := s.token.RbacV1().Roles(served)
	secrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}
	_, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: meta(s.name+"-secrets", served, s.owner), Rules: []rbacv1.PolicyRule{secrets}}, metav1.CreateOptions{})
	refused(t, "creating a Role that reads Secrets", err)
	notOwned := &rbacv1.Role{ObjectMeta: meta(s.name+"-not-owned", served, nil), Rules: []rbacv1.PolicyRule{s.thingsRule()}}
	waitEnforced(t, s, func() error { _, err := roles.Create(ctx, notOwned, metav1.CreateOptions{}); return err })
	_, err = roles.Create(ctx, notOwned, metav1.CreateOptions{})
	s.byPolicy(t, "creating a Role no Thing controls", err)
	mine, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: meta(s.name+"-mine", served, s.owner), Rules: []rbacv1.PolicyRule{s.thingsRule()}}, metav1.CreateOptions{})
	allowed(t, "creating the Role a Thing controls", err)
	if err == nil {
		t.Cleanup(func() {
			_ = s.admin.RbacV1().Roles(served).Delete(context.Background(), mine.Name, metav1.DeleteOptions{})
		})
	}
}

func checkRoleBindings(t *testing.T, s *scaffold) {
	ctx := context.Background()
	s.common(t, "rolebindings")
	name := s.name + "-mine"
	role, err := s.token.RbacV1().Roles(served).Create(ctx, &rbacv1.Role{ObjectMeta: meta(name, served, s.owner), Rules: []rbacv1.PolicyRule{s.thingsRule()}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Role a Thing controls: %v", err)
	}
	t.Cleanup(func() {
		_ = s.admin.RbacV1().Roles(served).Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	bindings := s.token.RbacV1().RoleBindings(served)
	binding := func(roleRef rbacv1.RoleRef, subject rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: meta(name, served, s.owner), RoleRef: roleRef, Subjects: []rbacv1.Subject{subject}}
	}
	own := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
	account := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: served}
	waitEnforced(t, s, func() error {
		notOwned := binding(own, account)
		notOwned.Name, notOwned.OwnerReferences = name+"-not-owned", nil
		_, err := bindings.Create(ctx, notOwned, metav1.CreateOptions{})
		return err
	})
	_, err = bindings.Create(ctx, binding(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}), metav1.CreateOptions{})
	refused(t, "binding admin to system:authenticated", err)
	_, err = bindings.Create(ctx, binding(own, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}), metav1.CreateOptions{})
	s.byPolicy(t, "binding its Role to system:authenticated", err)
	_, err = bindings.Create(ctx, binding(own, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "kube-system"}), metav1.CreateOptions{})
	s.byPolicy(t, "binding its Role to a ServiceAccount of another namespace", err)
	mine, err := bindings.Create(ctx, binding(own, account), metav1.CreateOptions{})
	allowed(t, "binding its Role to a ServiceAccount of its namespace", err)
	if err == nil {
		t.Cleanup(func() {
			_ = s.admin.RbacV1().RoleBindings(served).Delete(context.Background(), mine.Name, metav1.DeleteOptions{})
		})
	}
}
