package health_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/kooper/health"
)

// The reviews' answers are kept: a scraper asking every few seconds costs
// one TokenReview and one SubjectAccessReview per token, not per scrape.
// (The answers themselves are checked against a real API server in
// kooper/health/integration.)
func TestSecureMetricsKeepTheReviewsAnswers(t *testing.T) {
	client := fake.NewClientset()
	var tokenReviews, accessReviews atomic.Int32
	client.PrependReactor("create", "tokenreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		tokenReviews.Add(1)
		return true, &authenticationv1.TokenReview{Status: authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "prometheus"}}}, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		accessReviews.Add(1)
		return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
	})
	srv, err := health.Start(health.Config{
		Addr: "127.0.0.1:0", Gatherer: prom.NewRegistry(),
		SecureMetrics: &health.SecureMetrics{Addr: "127.0.0.1:0", TokenReviews: client.AuthenticationV1(), SubjectAccessReviews: client.AuthorizationV1()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the self-signed default
	for range 5 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+srv.SecureAddr()+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer a-token")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d, want 200", resp.StatusCode)
		}
	}
	if tokenReviews.Load() != 1 || accessReviews.Load() != 1 {
		t.Errorf("5 scrapes made %d TokenReviews and %d SubjectAccessReviews, want 1 each", tokenReviews.Load(), accessReviews.Load())
	}
}

func TestSecureMetricsNeedTheirClients(t *testing.T) {
	if _, err := health.Start(health.Config{Addr: "127.0.0.1:0", Gatherer: prom.NewRegistry(), SecureMetrics: &health.SecureMetrics{Addr: "127.0.0.1:0"}}); err == nil {
		t.Fatal("started without review clients")
	}
}
