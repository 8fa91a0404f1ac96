package child

import (
	"testing"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
)

func TestCommandLineParsesBackToTheSameArgs(t *testing.T) {
	for _, a := range []Args{
		{Impl: "kooper", Scenario: Single, Kubeconfig: "/k", Pods: 10, Updates: 5, Token: "run-0001",
			HandlerDelay: time.Millisecond, Timeout: time.Minute, StopTimeout: 3 * time.Second},
		{Impl: "floor", Scenario: Pair, Kubeconfig: "/k", Pods: 1, Timeout: time.Second, StopTimeout: time.Second},
		{Impl: "kooper", Scenario: Sharding, Kubeconfig: "/k", Pods: 10, Timeout: time.Minute, StopTimeout: time.Second,
			HandlerDelay: time.Millisecond, Replica: "b", Handlings: "/tmp/b.handlings",
			Election: impls.Election{Namespace: "bench", Name: "bench-sharding-0001", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}},
	} {
		cl := a.CommandLine()
		if !IsChild(cl) {
			t.Fatalf("got %v, not a child's command line", cl)
		}
		got, err := parse(cl)
		if err != nil {
			t.Fatalf("parse(%v): %v", cl, err)
		}
		if got != a {
			t.Errorf("got %+v back from %v, want %+v", got, cl, a)
		}
	}
	if _, err := parse([]string{Flag, "kooper", "-scenario", "triple", "-pods", "1"}); err == nil {
		t.Error("got no error for an unknown scenario, want one")
	}
	if _, err := parse([]string{Flag, "kooper", "-scenario", Sharding, "-pods", "1", "-lease-namespace", "bench", "-handlings", "/h", "-replica", "a"}); err == nil {
		t.Error("got no error for a sharded replica with no group (-lease), want one")
	}
}
