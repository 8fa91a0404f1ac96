package e2etest_test

import (
	"fmt"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/kooper/health"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
)

// errorRecorder is a testing.TB whose Errorf records instead of failing.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Helper() {}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// fakeAPIServer is a fake clientset answering TokenRequests with
// "token-of-<namespace>/<name>", TokenReviews of those tokens, and
// SubjectAccessReviews: allowed for everything but get /metrics, which
// mayGetMetrics decides by user name.
func fakeAPIServer(mayGetMetrics func(user string) bool) *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "token" {
			return false, nil, nil
		}
		name := action.(k8stesting.CreateActionImpl).Name
		tr := &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "token-of-" + action.GetNamespace() + "/" + name}}
		return true, tr, nil
	})
	client.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		tr := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if account, ok := strings.CutPrefix(tr.Spec.Token, "token-of-"); ok {
			ns, name, _ := strings.Cut(account, "/")
			tr.Status.Authenticated = true
			tr.Status.User = authenticationv1.UserInfo{Username: "system:serviceaccount:" + ns + ":" + name}
		}
		return true, tr, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		sar.Status.Allowed = true
		if a := sar.Spec.NonResourceAttributes; a != nil && a.Path == "/metrics" {
			sar.Status.Allowed = mayGetMetrics(sar.Spec.User)
		}
		return true, sar, nil
	})
	return client
}

func TestCheckSecureMetrics(t *testing.T) {
	prometheus := "system:serviceaccount:" + e2etest.PrometheusNamespace + ":" + e2etest.PrometheusAccount
	tests := []struct {
		name          string
		mayGetMetrics func(user string) bool
		wantErrors    []string // each in one error, in order
	}{
		{name: "an operator serving its metrics to Prometheus only passes", mayGetMetrics: func(user string) bool { return user == prometheus }},
		{
			name: "an operator serving its metrics to anyone with a token fails", mayGetMetrics: func(string) bool { return true },
			wantErrors: []string{"with a ServiceAccount without the permission: got 200"},
		},
		{
			name: "an operator refusing Prometheus fails", mayGetMetrics: func(string) bool { return false },
			wantErrors: []string{"with Prometheus's ServiceAccount: got 403"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The check asks the RBAC as it is applied (Prometheus may get
			// /metrics); the operator, on the library's secure metrics,
			// asks a reviewer that decides as the case says.
			client := fakeAPIServer(func(user string) bool { return user == prometheus })
			reviewer := fakeAPIServer(tt.mayGetMetrics)
			registry := prom.NewRegistry()
			registry.MustRegister(prom.NewGauge(prom.GaugeOpts{Name: "kooper_test_up", Help: "1"}))
			srv, err := health.Start(health.Config{
				Addr: "127.0.0.1:0", Gatherer: registry,
				SecureMetrics: &health.SecureMetrics{Addr: "127.0.0.1:0", TokenReviews: reviewer.AuthenticationV1(), SubjectAccessReviews: reviewer.AuthorizationV1()},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			rec := &errorRecorder{TB: t}
			e2etest.CheckSecureMetrics(rec, client, e2etest.SecureMetrics{Account: "kooper-op/op", PlainAddr: srv.Addr(), SecureAddr: srv.SecureAddr()})
			if len(rec.errors) != len(tt.wantErrors) {
				t.Fatalf("got errors %q, want %d saying %q", rec.errors, len(tt.wantErrors), tt.wantErrors)
			}
			for i, want := range tt.wantErrors {
				if !strings.Contains(rec.errors[i], want) {
					t.Errorf("got error %q, want it to say %q", rec.errors[i], want)
				}
			}
		})
	}
}
