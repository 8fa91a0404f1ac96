package controller_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's quickstart is Example_podLogger's "quickstart" region, so the
// code people copy first always compiles.
func TestTheReadmeQuickstartIsTheCompiledExample(t *testing.T) {
	readme := read(t, "../../README.md")
	example := read(t, "example_test.go")

	block := between(t, readme, "<!-- begin: quickstart", "<!-- end: quickstart -->")
	block = between(t, block, "```go\n", "```")
	region := between(t, example, "// region: quickstart\n", "\t// endregion")
	var lines []string
	for _, l := range strings.Split(region, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if got, want := block, strings.Join(lines, "\n"); got != want {
		t.Errorf("README quickstart differs from the example's region:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// Every relative link in the README names a file that exists.
func TestTheReadmeLinksExist(t *testing.T) {
	readme := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(read(t, "../../README.md"), "")
	links := regexp.MustCompile(`\]\(([^)#]+)\)`).FindAllStringSubmatch(readme, -1)
	if len(links) == 0 {
		t.Fatal("got no links in README.md, want some")
	}
	for _, m := range links {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join("../..", target)); err != nil {
			t.Errorf("README links to %s: %v", target, err)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %q found", start)
	}
	s = s[i+len(start):]
	j := strings.Index(s, end)
	if j < 0 {
		t.Fatalf("no %q found after %q", end, start)
	}
	return s[:j]
}
