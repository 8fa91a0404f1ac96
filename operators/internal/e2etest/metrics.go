package e2etest

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

// Prometheus's ServiceAccount, which the metrics-reader ClusterRoleBinding
// of every operator's RBAC (manifests/rbac/<operator>) names.
const (
	PrometheusNamespace = "monitoring"
	PrometheusAccount   = "prometheus"
)

// SecureMetrics is an operator running with its /metrics over HTTPS
// (health.Config.SecureMetrics), for CheckSecureMetrics.
type SecureMetrics struct {
	// Account is the operator's ServiceAccount, "namespace/name": the one
	// it runs as, which reviews the scrapers' tokens.
	Account string
	// PlainAddr serves /healthz and /readyz over HTTP (the operator's
	// HTTPAddr), SecureAddr /metrics over HTTPS, both as host:port.
	PlainAddr, SecureAddr string
}

// CheckSecureMetrics checks op's endpoints with real ServiceAccount tokens
// (TokenRequest API), the operator running as its ServiceAccount with the
// RBAC of its manifests applied: system:auth-delegator bound to it, its
// metrics-reader ClusterRole bound to PrometheusNamespace/PrometheusAccount,
// which it creates if missing. /metrics over HTTPS answers 401 without a
// token, 403 to a ServiceAccount the RBAC does not name, and the metrics
// (with kooper_ families) to Prometheus's; over HTTP, /metrics is not
// served, and /healthz and /readyz answer without a token (the kubelet's
// probes). admin creates the accounts and their tokens.
//
// It first waits until the API server's authorizer has the RBAC: the
// operator keeps each decision about a token for a minute, so an answer
// given before would stick.
func CheckSecureMetrics(t testing.TB, admin kubernetes.Interface, op SecureMetrics) {
	t.Helper()
	ctx := context.Background()
	opNamespace, opName, _ := strings.Cut(op.Account, "/")
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PrometheusNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("could not create the namespace %s: %v", PrometheusNamespace, err)
	}
	prometheus := serviceAccountToken(t, admin, PrometheusNamespace, PrometheusAccount)
	strangerName := "metrics-stranger-" + rand.String(5)
	stranger := serviceAccountToken(t, admin, metav1.NamespaceDefault, strangerName)
	t.Cleanup(func() {
		_ = admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Delete(context.Background(), strangerName, metav1.DeleteOptions{})
	})

	allowed := func(user string, groups []string, spec authorizationv1.SubjectAccessReviewSpec) bool {
		spec.User, spec.Groups = user, groups
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("could not review %s: %v", user, err)
		}
		return sar.Status.Allowed
	}
	Eventually(t, 30*time.Second, op.Account+" may create TokenReviews and SubjectAccessReviews (system:auth-delegator)", func() bool {
		user, groups := "system:serviceaccount:"+opNamespace+":"+opName, serviceAccountGroups(opNamespace)
		return allowed(user, groups, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: authenticationv1.GroupName, Resource: "tokenreviews", Verb: "create"}}) &&
			allowed(user, groups, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: authorizationv1.GroupName, Resource: "subjectaccessreviews", Verb: "create"}})
	})
	Eventually(t, 30*time.Second, PrometheusNamespace+"/"+PrometheusAccount+" may get /metrics", func() bool {
		return allowed("system:serviceaccount:"+PrometheusNamespace+":"+PrometheusAccount, serviceAccountGroups(PrometheusNamespace),
			authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}})
	})

	// As Prometheus scrapes the operator's self-signed certificate:
	// insecure_skip_verify.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the operator's self-signed certificate
	try := func(url, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	get := func(url, token string) (int, string) {
		t.Helper()
		status, body, err := try(url, token)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		return status, body
	}
	// The operator may not listen yet: until then, connections are refused.
	plain := "http://" + op.PlainAddr
	Eventually(t, 30*time.Second, "the operator is ready", func() bool {
		status, _, err := try(plain+"/readyz", "")
		return err == nil && status == http.StatusOK
	})

	secure := "https://" + op.SecureAddr + "/metrics"
	for _, tt := range []struct {
		who, token string
		status     int
		body       string // in the body
	}{
		{"no token", "", http.StatusUnauthorized, "bearer token is required"},
		{"a ServiceAccount without the permission", stranger, http.StatusForbidden, "may not get /metrics"},
		{"Prometheus's ServiceAccount", prometheus, http.StatusOK, "# TYPE kooper_"},
	} {
		if status, body := get(secure, tt.token); status != tt.status || !strings.Contains(body, tt.body) {
			t.Errorf("GET %s with %s: got %d %.200q, want %d with %q", secure, tt.who, status, body, tt.status, tt.body)
		}
	}
	if status, _ := get(plain+"/metrics", prometheus); status != http.StatusNotFound {
		t.Errorf("GET %s/metrics: got %d, want 404 (served over HTTPS only)", plain, status)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := get(plain+path, ""); status != http.StatusOK {
			t.Errorf("GET %s%s without a token: got %d %q, want 200 (the kubelet's probes)", plain, path, status, body)
		}
	}
}

// serviceAccountToken returns a token of the ServiceAccount namespace/name
// from the TokenRequest API, creating the account if missing.
func serviceAccountToken(t testing.TB, admin kubernetes.Interface, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	accounts := admin.CoreV1().ServiceAccounts(namespace)
	if _, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("could not create the ServiceAccount %s/%s: %v", namespace, name, err)
	}
	tr, err := accounts.CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("could not get a token of %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// serviceAccountGroups are the groups of a ServiceAccount of namespace.
func serviceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}
