package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
var root = filepath.Join("..", "..")

// The check make test runs: the library's counts within their limits.
func TestTheLibraryIsWithinItsBudget(t *testing.T) {
	lib, err := countLibrary(os.DirFS(filepath.Join(root, libraryDir)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := measure(lib)
	if err != nil {
		t.Fatal(err)
	}
	over, hints, err := check(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(over) > 0 {
		var b bytes.Buffer
		explain(&b, m, over)
		t.Error(b.String())
	}
	for _, h := range hints {
		t.Log(h)
	}
}

// Raising a limit takes a CHANGELOG.md entry that says why: each limit has
// its line there.
func TestEveryLimitIsInTheChangelog(t *testing.T) {
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range limits {
		line := fmt.Sprintf("surface budget `%s` %d", l.Budget, l.Max)
		if !bytes.Contains(changelog, []byte(line)) {
			t.Errorf("CHANGELOG.md has no line %q: a limit changes in a commit whose CHANGELOG.md entry says why", line)
		}
	}
}

func TestEverySetHasALimit(t *testing.T) {
	for _, s := range sets {
		if _, ok := limitOf(s.Name); !ok {
			t.Errorf("set %s has no limit", s.Name)
		}
	}
	if _, ok := limitOf(configBudget); !ok {
		t.Errorf("%s has no limit", configBudget)
	}
}

func TestSets(t *testing.T) {
	tests := []struct {
		dir  string
		want string // the set holding dir
	}{
		{dir: "controller", want: "operator"},
		{dir: "controller/leaderelection", want: "operator"},
		{dir: "metrics/prometheus", want: "operator"},
		{dir: "x", want: "experimental"},
		{dir: "x/sharding", want: "experimental"},
		{dir: "xtra", want: "operator"},
	}
	for _, tt := range tests {
		var in []string
		for _, s := range sets {
			if s.Has(tt.dir) {
				in = append(in, s.Name)
			}
		}
		if len(in) != 1 || in[0] != tt.want {
			t.Errorf("%s: got sets %v, want %s", tt.dir, in, tt.want)
		}
	}
}

// measureOf measures a library made of files, under the limits given.
func measureOf(t *testing.T, files map[string]string) measurement {
	t.Helper()
	lib, err := countLibrary(libraryFS(files))
	if err != nil {
		t.Fatal(err)
	}
	m, err := measure(lib)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCheck(t *testing.T) {
	saved := limits
	t.Cleanup(func() { limits = saved })
	limits = []limit{
		{Budget: "operator", Max: 4, Target: 2},
		{Budget: "experimental", Max: 1, Target: 1},
		{Budget: configBudget, Max: 3, Target: 1},
	}
	files := map[string]string{
		"controller/config.go": "package controller\n\ntype Config struct{ Name string }\n",
		"internal/a/a.go":      "package a\n\nfunc A() {}\n\nfunc B() {}\n",
		"x/s/s.go":             "package s\n\nfunc S() {}\n",
	}
	m := measureOf(t, files)
	over, hints, err := check(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(over) != 0 {
		t.Errorf("got over %v, want none", over)
	}
	// operator: Config, Config.Name (internal/a is in no set); config: 1.
	want := []string{"surface budget `operator` is 2, below its limit 4", "surface budget `config` is 1, below its limit 3"}
	if len(hints) != len(want) {
		t.Fatalf("got hints %q, want %d", hints, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(hints[i], w) {
			t.Errorf("got hint %q, want it to start with %q", hints[i], w)
		}
	}

	files["controller/more.go"] = "package controller\n\nfunc New() {}\n\nfunc Run() {}\n\nfunc Stop() {}\n"
	files["owner/owner.go"] = "package owner\n\nfunc Of() {}\n"
	grown := measureOf(t, files)
	over, _, err = check(grown)
	if err != nil {
		t.Fatal(err)
	}
	if len(over) != 1 || over[0].Limit.Budget != "operator" || over[0].Count != 6 {
		t.Fatalf("got over %+v, want operator at 6", over)
	}
	var b bytes.Buffer
	explainSet(&b, grown, "operator")
	for _, want := range []string{"controller 5", "owner 1"} {
		if !hasRow(b.String(), want) {
			t.Errorf("got\n%s\nwant a row %q", b.String(), want)
		}
	}
}

// hasRow reports whether a line of table has the words of row.
func hasRow(table, row string) bool {
	for line := range strings.Lines(table) {
		if strings.Join(strings.Fields(line), " ") == row {
			return true
		}
	}
	return false
}

// -check's failure names the limit's line the CHANGELOG.md entry needs.
func TestExplainNamesTheChangelogLine(t *testing.T) {
	m := measureOf(t, map[string]string{"controller/config.go": "package controller\n\ntype Config struct{ Name, Kind string }\n"})
	var b bytes.Buffer
	explain(&b, m, []overrun{{Limit: limit{Budget: configBudget, Max: 1, Target: 1}, Count: 2}})
	got := b.String()
	for _, w := range []string{"surface budget `config` is 2, over its limit 1", "Config.Name, Config.Kind", "CHANGELOG.md", "\"surface budget `config` 2\""} {
		if !strings.Contains(got, w) {
			t.Errorf("got\n%s\nwant it to contain %q", got, w)
		}
	}
}

func TestRunCheckPasses(t *testing.T) {
	var b bytes.Buffer
	if err := run([]string{"-check", "-root", root}, &b); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	if !strings.Contains(b.String(), "surface within budget: operator ") {
		t.Errorf("got\n%s\nwant the summary", b.String())
	}
}

func TestRunReport(t *testing.T) {
	var b bytes.Buffer
	if err := run([]string{"-v", "-root", root}, &b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, w := range []string{
		"operator: ", "experimental: ", "config: ",
		"package                          top-level methods fields names",
		"controller.New                                               top-level",
		"  controller.Config.Name\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("got\n%s\nwant it to contain %q", got, w)
		}
	}
}

// A set over its limit shows its packages, largest first.
func TestExplainSetListsLargestFirst(t *testing.T) {
	m := measureOf(t, map[string]string{
		"controller/config.go": "package controller\n\ntype Config struct{}\n",
		"owner/owner.go":       "package owner\n\nfunc One() {}\n\nfunc Two() {}\n",
	})
	var b bytes.Buffer
	explain(&b, m, []overrun{{Limit: limit{Budget: "operator", Max: 1, Target: 1}, Count: 3}})
	got := b.String()
	want := "package                          names\nowner                                2\ncontroller                           1\n"
	if !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant it to contain\n%s", got, want)
	}
}
