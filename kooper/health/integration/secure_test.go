package integration_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/health"
)

var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(envtest.RunTests(m, envtest.Options{}, &cluster))
}

// token returns a token of a new ServiceAccount name in ns, from the
// TokenRequest API.
func token(t *testing.T, client kubernetes.Interface, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func bind(t *testing.T, client kubernetes.Interface, name, role, ns, sa string) {
	t.Helper()
	_, err := client.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// /metrics over HTTPS answers a token with the permission and refuses
// the others; the operator reviews tokens with its own ServiceAccount,
// bound to system:auth-delegator only. /healthz and /readyz stay plain.
func TestSecureMetricsServeOnlyAuthorizedTokens(t *testing.T) {
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The role a Prometheus ServiceAccount needs.
	role := "metrics-reader-" + ns.Name
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	operator := token(t, admin, ns.Name, "operator")
	bind(t, admin, "operator-auth-delegator-"+ns.Name, "system:auth-delegator", ns.Name, "operator")
	prometheus := token(t, admin, ns.Name, "prometheus")
	bind(t, admin, "prometheus-"+ns.Name, role, ns.Name, "prometheus")
	stranger := token(t, admin, ns.Name, "stranger")

	// The operator's client: its ServiceAccount's token, not admin.
	cfg := cluster.Config()
	asOperator := &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}, BearerToken: operator}
	reviewer := kubernetes.NewForConfigOrDie(asOperator)
	registry := prom.NewRegistry()
	registry.MustRegister(prom.NewGaugeFunc(prom.GaugeOpts{Name: "kooper_test_answer", Help: "42"}, func() float64 { return 42 }))
	srv, err := health.Start(health.Config{
		Addr: "127.0.0.1:0", Gatherer: registry,
		SecureMetrics: &health.SecureMetrics{Addr: "127.0.0.1:0", TokenReviews: reviewer.AuthenticationV1(), SubjectAccessReviews: reviewer.AuthorizationV1()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the self-signed default, as Prometheus scrapes it
	get := func(url, bearer string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	secure := "https://" + srv.SecureAddr() + "/metrics"
	for _, tt := range []struct {
		name, token string
		status      int
		body        string
	}{
		{"no token", "", http.StatusUnauthorized, "bearer token is required"},
		{"a token the API server does not know", "not-a-token", http.StatusUnauthorized, "not valid"},
		{"a ServiceAccount without the permission", stranger, http.StatusForbidden, `system:serviceaccount:` + ns.Name + `:stranger" may not get /metrics`},
		{"Prometheus's ServiceAccount", prometheus, http.StatusOK, "kooper_test_answer 42"},
		{"Prometheus again (cached)", prometheus, http.StatusOK, "kooper_test_answer 42"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(secure, tt.token)
			if status != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("got %d %q, want %d with %q", status, body, tt.status, tt.body)
			}
		})
	}
	plain := "http://" + srv.Addr()
	if status, _ := get(plain+"/metrics", prometheus); status != http.StatusNotFound {
		t.Errorf("plain /metrics: got %d, want 404 (it is served over HTTPS only)", status)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if status, _ := get(plain+p, ""); status != http.StatusOK {
			t.Errorf("plain %s: got %d, want 200 without a token (the kubelet's probes)", p, status)
		}
	}
}
