package operator

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Leader election renews the Lease through a rate limiter nobody else
// uses: with the webhook's, the metrics' and the controller's limiters
// exhausted (a flood of AdmissionReviews and bearer tokens, a busy
// controller), a renewal is still let through at once. client-go makes a
// limiter per clientset only when the config has none, so a config
// carrying one (shared by whoever built it) must not reach leader election
// either.
func TestLeaderElectionHasARateLimiterOfItsOwn(t *testing.T) {
	tests := []struct {
		name string
		cfg  *rest.Config
	}{
		{name: "a config with QPS and burst", cfg: &rest.Config{Host: "https://127.0.0.1:1", QPS: 50, Burst: 100}},
		{name: "a config carrying a rate limiter", cfg: &rest.Config{Host: "https://127.0.0.1:1", RateLimiter: flowcontrol.NewTokenBucketRateLimiter(50, 100)}},
		{name: "a config without limits (client-go's defaults)", cfg: &rest.Config{Host: "https://127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newClients(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			lease := c.lease.CoordinationV1().RESTClient().GetRateLimiter()
			others := map[string]flowcontrol.RateLimiter{
				"the webhook's SubjectAccessReviews": c.webhook.AuthorizationV1().RESTClient().GetRateLimiter(),
				"the metrics' TokenReviews":          c.metrics.AuthenticationV1().RESTClient().GetRateLimiter(),
				"the metrics' SubjectAccessReviews":  c.metrics.AuthorizationV1().RESTClient().GetRateLimiter(),
				"the controller's pods and Events":   c.kube.CoreV1().RESTClient().GetRateLimiter(),
				"the controller's PodTerminators":    c.chaos.ChaosV1beta1().RESTClient().GetRateLimiter(),
			}
			if lease == nil {
				t.Fatal("got no rate limiter for leader election, want one of its own")
			}
			for name, l := range others {
				if l == nil {
					t.Fatalf("got no rate limiter for %s, want one", name)
				}
				// Exhaust it: every token of its burst taken.
				for l.TryAccept() {
				}
			}
			if !lease.TryAccept() {
				t.Error("got leader election's request held back once the webhook's, the metrics' and the controller's limiters were exhausted, want it let through at once")
			}
			for name, l := range others {
				if l == lease {
					t.Errorf("leader election shares its rate limiter with %s", name)
				}
			}
			// The webhook's and the metrics' reviews wait behind nobody's
			// requests either, and nobody waits behind theirs.
			webhook, metrics, kube := others["the webhook's SubjectAccessReviews"], others["the metrics' TokenReviews"], others["the controller's pods and Events"]
			if webhook == metrics || webhook == kube || metrics == kube {
				t.Error("the webhook's, the metrics' and the controller's clients share a rate limiter, want one each")
			}
		})
	}
}
