package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every operator, two replicas each, runs on the node exactly as its
// manifests say, and does its job with its own ServiceAccount: the
// examples of its README and docs work (its deployable's examples). Then
// four broken manifests of the first operator, each a mistake no other
// test would notice, are each caught.
func TestTheOperatorsRunAsTheirDeploymentsSay(t *testing.T) {
	p := startPodsTest(t)
	ctx := context.Background()
	var runs []*deployed
	for _, op := range operators {
		runs = append(runs, p.deploy(t, op.name, nil))
	}
	for _, d := range runs {
		if err := p.check(ctx, d); err != nil {
			t.Fatalf("%s: %v", d.op, err)
		}
	}
	for _, op := range operators {
		if op.examples != nil {
			op.examples(t, p)
		}
	}
	for _, d := range runs {
		if err := p.stillLive(ctx, d); err != nil {
			t.Errorf("%s: %v", d.op, err)
		}
	}
	if t.Failed() {
		return
	}
	mutated := operators[0].name
	for _, op := range operators[1:] {
		p.removeDeployment(t, op.name)
	}

	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			p.removeDeployment(t, mutated)
			d := p.deploy(t, mutated, func(objs []*unstructured.Unstructured) { m.mutate(t, mutated, objs) })
			err := p.check(ctx, d)
			if err == nil {
				t.Fatalf("%s: not caught", m.name)
			}
			t.Logf("caught: %v", err)
			if !strings.Contains(err.Error(), m.want) {
				t.Errorf("caught for another reason than %q", m.want)
			}
		})
	}
}

// mutations are mistakes in the manifests that the run must catch, each
// with a word of the failure it must give.
var mutations = []struct {
	name   string
	mutate func(t *testing.T, op string, objs []*unstructured.Unstructured)
	want   string
}{
	{"a flag that does not exist", func(t *testing.T, _ string, objs []*unstructured.Unstructured) {
		container(t, objs, func(c map[string]any) {
			c["args"] = append(c["args"].([]any), "-http-address=:8080")
		})
	}, "flag provided but not defined: -http-address"},
	{"a probe path that does not exist", func(t *testing.T, _ string, objs []*unstructured.Unstructured) {
		container(t, objs, func(c map[string]any) {
			c["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)["path"] = "/ready"
		})
	}, "statuscode: 404"},
	{"a Service port that is no container port", func(t *testing.T, _ string, objs []*unstructured.Unstructured) {
		for _, o := range objs {
			if o.GetKind() == "Service" {
				ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
				ports[0].(map[string]any)["targetPort"] = int64(9444)
				_ = unstructured.SetNestedSlice(o.Object, ports, "spec", "ports")
				return
			}
		}
		t.Fatal("no Service")
	}, "9444"},
	{"a permission the ServiceAccount lacks", func(t *testing.T, op string, objs []*unstructured.Unstructured) {
		for _, o := range objs {
			if o.GetKind() != "Role" || o.GetNamespace() != namespaceOf(op) {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			n := len(rules)
			kept := slices.DeleteFunc(rules, func(r any) bool {
				return slices.Contains(r.(map[string]any)["resources"].([]any), any("leases"))
			})
			if len(kept) == n {
				continue
			}
			_ = unstructured.SetNestedSlice(o.Object, kept, "rules")
			return
		}
		t.Fatal("no Role granting leases")
	}, "forbidden"},
}

// container changes the Deployment's one container.
func container(t *testing.T, objs []*unstructured.Unstructured, change func(c map[string]any)) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			change(cs[0].(map[string]any))
			_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
			return
		}
	}
	t.Fatal("no Deployment")
}

// docExamples returns the YAML documents of kind, of API group group, in
// the operators' READMEs and docs/ but the tutorials: fenced blocks, and
// heredocs in shell blocks.
func docExamples(t *testing.T, group, kind string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "operators", "*", "README.md"))
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	// The tutorials' examples are not taken: docs/integration runs every
	// step of a tutorial, and some of its objects are meant to be refused
	// or to fail (an admin the schema forbids, a namespace made by hand).
	docs = slices.DeleteFunc(docs, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "tutorial-") })
	found := map[string]string{}
	start := regexp.MustCompile(`^apiVersion: ` + regexp.QuoteMeta(group) + `/`)
	for _, f := range append(files, docs...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc []string
		flush := func() {
			if len(doc) > 0 && slices.Contains(doc, "kind: "+kind) {
				rel, _ := filepath.Rel(root, f)
				found[rel+": "+strings.Join(doc, "\n")] = strings.Join(doc, "\n")
			}
			doc = nil
		}
		for line := range strings.Lines(string(b)) {
			line = strings.TrimRight(line, "\n")
			switch {
			case start.MatchString(line):
				flush()
				doc = []string{line}
			case doc != nil && (strings.HasPrefix(line, "```") || line == "EOF" || line == "---"):
				flush()
			case doc != nil:
				doc = append(doc, line)
			}
		}
		flush()
	}
	if len(found) == 0 {
		t.Fatalf("no %s example in the READMEs and docs", kind)
	}
	return found
}

func metaReady(conds []metav1.Condition) bool {
	return slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == "Ready" && c.Status == metav1.ConditionTrue })
}
