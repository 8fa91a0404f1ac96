package main

import (
	"errors"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	tests := []struct {
		name   string
		readme string
		want   string
	}{
		{
			name:   "the first sentence of the paragraph after the title",
			readme: "# shop\n\nA shop operator. It sells.\n\nMore.\n",
			want:   "A shop operator.",
		},
		{
			name:   "a paragraph's lines are joined with spaces",
			readme: "# shop\n\nA shop\n  operator that\nsells. It is small.\n",
			want:   "A shop operator that sells.",
		},
		{
			name:   "a paragraph without a sentence break is the summary",
			readme: "# shop\n\nA shop operator.\n\n## Build\n",
			want:   "A shop operator.",
		},
		{
			name:   "a paragraph without a final dot is kept whole",
			readme: "# shop\nA shop operator\n",
			want:   "A shop operator",
		},
		{
			name:   "dots inside backticks do not end the sentence",
			readme: "# shop\n\nAn `Order` (`shop.example.com/v1alpha1`, ``a. B``) is sold. Then shipped.\n",
			want:   "An `Order` (`shop.example.com/v1alpha1`, ``a. B``) is sold.",
		},
		{
			name:   "a dot not followed by a space and an uppercase letter does not end it",
			readme: "# shop\n\nSells on shop.example.com, e.g. books. Ships too.\n",
			want:   "Sells on shop.example.com, e.g. books.",
		},
		{
			name:   "links are flattened to their text",
			readme: "# shop\n\nBuilt on [`kooper`](../../kooper/doc.go) and [the guide][guide]. More.\n",
			want:   "Built on `kooper` and the guide.",
		},
		{
			name:   "pipes are escaped for the table cell",
			readme: "# shop\n\nSells `a|b` or c | d.\n",
			want:   "Sells `a\\|b` or c \\| d.",
		},
		{
			name: "a scaffolded README",
			readme: "# widget\n\nScaffolded by `make new-operator` ([`hack/newoperator`](../../hack/newoperator/main.go)): a cluster-scoped\n" +
				"`Widget` (`democluster.example.com/v1alpha1`, [`apis/democluster/v1alpha1`](../../apis/democluster/v1alpha1/types.go)) that owns a ConfigMap and a ServiceAccount.\n" +
				"Replace the example field `greeting` and what is made of it with your own.\n\n```yaml\nkind: Widget\n```\n",
			want: "Scaffolded by `make new-operator` (`hack/newoperator`): a cluster-scoped `Widget` (`democluster.example.com/v1alpha1`, `apis/democluster/v1alpha1`) that owns a ConfigMap and a ServiceAccount.",
		},
		{
			name:   "no title is no summary",
			readme: "A shop operator.\n",
		},
		{
			name:   "a code block after the title is no summary",
			readme: "# shop\n\n```yaml\nkind: Shop\n```\n",
		},
		{
			name:   "a heading after the title is no summary",
			readme: "# shop\n\n## Build\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(tt.readme); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The repository's operators each have a summary.
func TestTheOperatorsHaveSummaries(t *testing.T) {
	ops, problems, err := listOperators(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s", p)
	}
	for _, op := range ops {
		t.Logf("%s: %s", op.Name, op.Summary)
	}
}

// An operators list is rewritten from the operators, only between its
// markers, and -check fails once an operator is added.
func TestRunFillsTheOperatorsList(t *testing.T) {
	root := t.TempDir()
	write(t, root, "main.go", "package main\n\n// region: main\nfunc main() {}\n// endregion: main\n")
	addOperator := func(name, readme string) {
		write(t, root, "operators/"+name+"/cmd/"+name+"/main.go", "package main\n")
		write(t, root, "operators/"+name+"/README.md", readme)
	}
	addOperator("shop", "# shop\n\nSells things. Well.\n")
	addOperator("bank", "# bank\n\nKeeps [money](../../money.md).\n")
	write(t, root, "operators/internal/cli/cli.go", "package cli\n")
	write(t, root, "operators/notyet/README.md", "# notyet\n\nNo command.\n")
	doc := "# Doc\n\n<!-- include: main.go#main -->\n```go\nfunc main() {}\n```\n\n" +
		"```md\n" + listBegin + "\n" + listEnd + "\n```\n\n" +
		listBegin + "\nold\n" + listEnd + "\n\nAfter.\n"
	write(t, root, "docs/a.md", doc)
	write(t, root, "docs/other.md", "# Other\n")

	runOK := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := run(append([]string{"-root", root}, args...), &out); err != nil {
			t.Fatalf("got %v error %v, want nil; output:\n%s", args, err, out.String())
		}
		return out.String()
	}
	runFails := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := run(append([]string{"-root", root}, args...), &out); !errors.Is(err, errFailed) {
			t.Fatalf("got %v error %v, want %v; output:\n%s", args, err, errFailed, out.String())
		}
		return out.String()
	}
	list := func(rows ...string) string {
		return "# Doc\n\n<!-- include: main.go#main -->\n```go\nfunc main() {}\n```\n\n" +
			"```md\n" + listBegin + "\n" + listEnd + "\n```\n\n" +
			listBegin + "\n\n| operator | what it is |\n|---|---|\n" + strings.Join(rows, "\n") + "\n\n" + listEnd + "\n\nAfter.\n"
	}
	bank := "| [bank](../operators/bank/README.md) | Keeps money. |"
	shop := "| [shop](../operators/shop/README.md) | Sells things. |"

	if got, want := runFails("-check"), "docs/a.md:13: operators list differs from operators/*/README.md; run `go run ./hack/docs`\n"; got != want {
		t.Errorf("got -check output %q, want %q", got, want)
	}
	if got := read(t, root, "docs/a.md"); got != doc {
		t.Errorf("-check changed the file:\n%s", got)
	}
	if got, want := runOK(), "docs/a.md:13: rewrote the operators list\n"; !strings.HasPrefix(got, want) {
		t.Errorf("got output %q, want it to start with %q", got, want)
	}
	if got, want := read(t, root, "docs/a.md"), list(bank, shop); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := read(t, root, "docs/other.md"); got != "# Other\n" {
		t.Errorf("got a file without markers changed:\n%s", got)
	}
	runOK("-check")

	addOperator("cart", "# cart\n\nHolds `a.b` items. Briefly.\n")
	runFails("-check")
	runOK()
	cart := "| [cart](../operators/cart/README.md) | Holds `a.b` items. |"
	if got, want := read(t, root, "docs/a.md"), list(bank, cart, shop); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	runOK("-check")
}

func TestRunReportsBrokenOperatorsLists(t *testing.T) {
	tests := []struct {
		name   string
		readme string // of operators/shop; none if empty
		doc    string
		want   string
	}{
		{
			name: "a missing README",
			doc:  listBegin + "\n" + listEnd + "\n",
			want: "operators/shop/README.md: missing",
		},
		{
			name:   "a README without a paragraph after its title",
			readme: "# shop\n",
			doc:    listBegin + "\n" + listEnd + "\n",
			want:   "operators/shop/README.md: no paragraph",
		},
		{
			name:   "a begin marker without an end marker",
			readme: "# shop\n\nSells.\n",
			doc:    "# Doc\n" + listBegin + "\n| old |\n",
			want:   "docs/a.md:2: operators list has no end marker",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, "main.go", "package main\n\n// region: main\nfunc main() {}\n// endregion: main\n")
			write(t, root, "README.md", "<!-- include: main.go#main -->\n```go\nfunc main() {}\n```\n")
			write(t, root, "operators/shop/cmd/shop/main.go", "package main\n")
			if tt.readme != "" {
				write(t, root, "operators/shop/README.md", tt.readme)
			}
			write(t, root, "docs/a.md", tt.doc)
			var out strings.Builder
			if err := run([]string{"-check", "-root", root}, &out); !errors.Is(err, errFailed) {
				t.Fatalf("got error %v, want %v; output:\n%s", err, errFailed, out.String())
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("got output %q, want it to contain %q", out.String(), tt.want)
			}
		})
	}
}
