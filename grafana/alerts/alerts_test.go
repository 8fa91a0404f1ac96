// Package alerts_test checks the Prometheus alerting rules in this directory
// with the pinned promtool that `make prometheus` links into the
// repository's bin/ (make test-unit builds it first).
package alerts_test

import (
	"os/exec"
	"testing"

	"github.com/kooperkit/kooper/hack/tools"
)

func promtool(t *testing.T) string {
	t.Helper()
	path, err := tools.Path("promtool")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTheRulesAreValidAndTheirUnitTestsPass(t *testing.T) {
	tool := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "kooper-rules.yml"},
		{"test", "rules", "kooper-rules_test.yml"},
	} {
		out, err := exec.Command(tool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
