// Package alerts_test checks the Prometheus alerting rules in this directory
// with promtool (Debian's prometheus package; .ci/run installs it).
package alerts_test

import (
	"os"
	"os/exec"
	"testing"
)

func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing: .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool is missing: apt-get install prometheus")
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
