package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExtractRegion(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		src     string
		region  string
		want    string
		wantErr error
	}{
		{
			name:   "a region is the lines between its markers, dedented",
			path:   "main.go",
			src:    "package main\n\nfunc main() {\n\t// region: body\n\tx := 1\n\tif x > 0 {\n\t\tprintln(x)\n\t}\n\t// endregion: body\n}\n",
			region: "body",
			want:   "x := 1\nif x > 0 {\n\tprintln(x)\n}\n",
		},
		{
			name:   "blank lines are kept, emptied, and do not limit the dedent",
			path:   "main.go",
			src:    "\t// region: r\n\ta()\n\t \n\n\tb()\n\t// endregion: r\n",
			region: "r",
			want:   "a()\n\n\nb()\n",
		},
		{
			name: "operators' markers are not quoted: a marker line goes, a marker at the end of a line is cut off",
			path: "catalog.go",
			src: "// region: ops\nvar ops = map[string]int{\n\t\"bank\": 1,\n\t\"shop\": 2, // +kooper:" + "operator=shop\n\t// +kooper:" + "operator-begin=cart\n\t\"cart\": 3,\n" +
				"\t// +kooper:" + "operator-end=cart\n}\n// endregion: ops\n",
			region: "ops",
			want:   "var ops = map[string]int{\n\t\"bank\": 1,\n\t\"shop\": 2,\n\t\"cart\": 3,\n}\n",
		},
		{
			name:   "blank lines at either end are dropped, so a marker can stay apart from a doc comment",
			path:   "config.go",
			src:    "// region: config\n\n// Config configures.\ntype Config struct{}\n\n// endregion: config\n",
			region: "config",
			want:   "// Config configures.\ntype Config struct{}\n",
		},
		{
			name:   "only a common prefix of identical whitespace is removed",
			path:   "main.go",
			src:    "// region: r\n\t\ta()\n\t  b()\n// endregion: r\n",
			region: "r",
			want:   "\ta()\n  b()\n",
		},
		{
			name:   "markers of other regions inside are dropped",
			path:   "main.go",
			src:    "// region: outer\na()\n// region: inner\nb()\n// endregion: inner\nc()\n// endregion: outer\n",
			region: "outer",
			want:   "a()\nb()\nc()\n",
		},
		{
			name:   "regions may overlap",
			path:   "main.go",
			src:    "// region: a\n1\n// region: b\n2\n// endregion: a\n3\n// endregion: b\n",
			region: "b",
			want:   "2\n3\n",
		},
		{
			name:   "a nested region is found inside another",
			path:   "main.go",
			src:    "// region: outer\na()\n  // region: inner\n  b()\n  // endregion: inner\n// endregion: outer\n",
			region: "inner",
			want:   "b()\n",
		},
		{
			name: "no region name is the whole file without its markers",
			path: "main.go",
			src:  "package main\n\n// region: r\nfunc main() {}\n// endregion: r\n",
			want: "package main\n\nfunc main() {}\n",
		},
		{
			name:   "YAML regions use # markers",
			path:   "deploy.yaml",
			src:    "apiVersion: v1\nkind: ConfigMap\ndata:\n  # region: data\n  a: \"1\"\n  b: \"2\"\n  # endregion: data\n",
			region: "data",
			want:   "a: \"1\"\nb: \"2\"\n",
		},
		{
			name:   "a Makefile region uses # markers",
			path:   "Makefile",
			src:    "# region: docs\ndocs:\n\tgo run ./hack/docs\n# endregion: docs\n",
			region: "docs",
			want:   "docs:\n\tgo run ./hack/docs\n",
		},
		{
			name:   "# is not a marker in a Go file",
			path:   "main.go",
			src:    "// region: r\n# region: r\n// endregion: r\n",
			region: "r",
			want:   "# region: r\n",
		},
		{
			name:   "a comment with spaces after region: is prose, not a marker",
			path:   "main.go",
			src:    "// region: r\n// region: the EU one\n// endregion: r\n",
			region: "r",
			want:   "// region: the EU one\n",
		},
		{
			name:    "a missing region is an error",
			path:    "main.go",
			src:     "// region: a\nx\n// endregion: a\n",
			region:  "b",
			wantErr: errNoRegion,
		},
		{
			name:    "a region without its endregion is an error",
			path:    "main.go",
			src:     "// region: a\nx\n",
			region:  "a",
			wantErr: errNoEndRegion,
		},
		{
			name:    "an endregion before its region is an error",
			path:    "main.go",
			src:     "// endregion: a\nx\n// region: a\n",
			region:  "a",
			wantErr: errEndBeforeRegion,
		},
		{
			name:    "a region marked twice is an error",
			path:    "main.go",
			src:     "// region: a\nx\n// endregion: a\n// region: a\ny\n// endregion: a\n",
			region:  "a",
			wantErr: errDupRegion,
		},
		{
			name:    "a bare endregion is an error",
			path:    "main.go",
			src:     "// region: a\nx\n// endregion\n",
			region:  "a",
			wantErr: errBadMarker,
		},
		{
			name:    "an empty region is an error",
			path:    "main.go",
			src:     "// region: a\n\n// endregion: a\n",
			region:  "a",
			wantErr: errEmptyRegion,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := extractRegion(tt.path, []byte(tt.src), tt.region)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestParseMarkdown(t *testing.T) {
	tests := []struct {
		name         string
		md           string
		wantIncludes []include
		wantLangs    []string
		wantProblems []string
	}{
		{
			name:         "an include names the block after it",
			md:           "# T\n\n<!-- include: a/b.go#r -->\n```go\nx\n```\n",
			wantIncludes: []include{{File: "t.md", Line: 3, Path: "a/b.go", Region: "r"}},
			wantLangs:    []string{"go"},
		},
		{
			name:         "an include without a region is the whole file",
			md:           "<!--include: Makefile-->\n```make\nx\n```\n",
			wantIncludes: []include{{File: "t.md", Line: 1, Path: "Makefile"}},
			wantLangs:    []string{"make"},
		},
		{
			name:         "an include in a list item is indented with its block",
			md:           "1. Step:\n\n   <!-- include: a.go#r -->\n   ```go\n   x\n   ```\n",
			wantIncludes: []include{{File: "t.md", Line: 3, Path: "a.go", Region: "r"}},
			wantLangs:    []string{"go"},
		},
		{
			name:      "an include comment inside a block is text",
			md:        "````md\n<!-- include: a.go#r -->\n```go\nx\n```\n````\n",
			wantLangs: []string{"md"},
		},
		{
			name:         "an include must be immediately followed by its block",
			md:           "<!-- include: a.go#r -->\n\n```go\nx\n```\n",
			wantLangs:    []string{"go"},
			wantProblems: []string{"t.md:1: include is not immediately followed by a fenced block"},
		},
		{
			name:         "an include leaving the repository is refused",
			md:           "<!-- include: ../x.go#r -->\n```go\nx\n```\n",
			wantLangs:    []string{"go"},
			wantProblems: []string{"t.md:1: include \"../x.go#r\": the path must be relative to the repository root and stay inside it"},
		},
		{
			name:         "an empty region name is refused",
			md:           "<!-- include: a.go# -->\n```go\nx\n```\n",
			wantLangs:    []string{"go"},
			wantProblems: []string{"t.md:1: include \"a.go#\": empty region name after #"},
		},
		{
			name:         "an unclosed fence is a problem",
			md:           "```sh\nx\n",
			wantProblems: []string{"t.md:1: fenced block is never closed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks, problems := parseMarkdown("t.md", strings.Split(tt.md, "\n"))
			var includes []include
			var langs, probs []string
			for _, b := range blocks {
				langs = append(langs, b.Lang)
				if b.Include != nil {
					includes = append(includes, *b.Include)
				}
			}
			for _, p := range problems {
				probs = append(probs, p.String())
			}
			if !slices.Equal(includes, tt.wantIncludes) || !slices.Equal(langs, tt.wantLangs) || !slices.Equal(probs, tt.wantProblems) {
				t.Errorf("got includes %v, langs %v, problems %q; want %v, %v, %q",
					includes, langs, probs, tt.wantIncludes, tt.wantLangs, tt.wantProblems)
			}
		})
	}
}

func TestProcessFile(t *testing.T) {
	root := t.TempDir()
	write(t, root, "src/main.go", "package main\n\nfunc main() {\n\t// region: hello\n\tprintln(\"hello\")\n\t// endregion: hello\n}\n")
	write(t, root, "deploy/app.yaml", "spec:\n  # region: replicas\n  replicas: 2\n  # endregion: replicas\n")

	tests := []struct {
		name         string
		md           string
		requireGo    bool
		wantFixed    string
		wantStale    int
		wantProblems []string
	}{
		{
			name:      "an up-to-date block is left alone",
			md:        "<!-- include: src/main.go#hello -->\n```go\nprintln(\"hello\")\n```\n",
			requireGo: true,
			wantFixed: "<!-- include: src/main.go#hello -->\n```go\nprintln(\"hello\")\n```\n",
		},
		{
			name:      "a stale block is rewritten from its region",
			md:        "Intro.\n<!-- include: src/main.go#hello -->\n```go\nprintln(\"bye\")\nmore()\n```\nOutro.\n",
			wantFixed: "Intro.\n<!-- include: src/main.go#hello -->\n```go\nprintln(\"hello\")\n```\nOutro.\n",
			wantStale: 1,
		},
		{
			name:      "an empty block is filled",
			md:        "<!-- include: deploy/app.yaml#replicas -->\n```yaml\n```\n",
			wantFixed: "<!-- include: deploy/app.yaml#replicas -->\n```yaml\nreplicas: 2\n```\n",
			wantStale: 1,
		},
		{
			name:      "an indented block keeps its indentation",
			md:        "- Step:\n  <!-- include: src/main.go#hello -->\n  ```go\n  old()\n  ```\n",
			wantFixed: "- Step:\n  <!-- include: src/main.go#hello -->\n  ```go\n  println(\"hello\")\n  ```\n",
			wantStale: 1,
		},
		{
			name:         "a go block that is not an include is a problem where includes are required",
			md:           "```go\nx := 1\n```\n",
			requireGo:    true,
			wantFixed:    "```go\nx := 1\n```\n",
			wantProblems: []string{"t.md:1: go block is not an include: quote it from a compiled file with <!-- include: PATH#REGION --> and run `go run ./hack/docs`"},
		},
		{
			name:      "a go block that is not an include is allowed elsewhere, and so are other languages",
			md:        "```go\nx := 1\n```\n```sh\nmake test\n```\n",
			wantFixed: "```go\nx := 1\n```\n```sh\nmake test\n```\n",
		},
		{
			name:         "a missing file is a problem, not a rewrite",
			md:           "<!-- include: src/gone.go#hello -->\n```go\nx\n```\n",
			wantFixed:    "<!-- include: src/gone.go#hello -->\n```go\nx\n```\n",
			wantProblems: []string{"t.md:1: include src/gone.go#hello: open " + filepath.Join(root, "src/gone.go") + ": no such file or directory"},
		},
		{
			name:         "a missing region is a problem, not a rewrite",
			md:           "<!-- include: src/main.go#bye -->\n```go\nx\n```\n",
			wantFixed:    "<!-- include: src/main.go#bye -->\n```go\nx\n```\n",
			wantProblems: []string{"t.md:1: include src/main.go#bye: src/main.go: region not found: bye"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := processFile(root, "t.md", []byte(tt.md), tt.requireGo)
			var probs []string
			for _, p := range res.Problems {
				probs = append(probs, p.String())
			}
			if string(res.Fixed) != tt.wantFixed {
				t.Errorf("got fixed file\n%s\nwant\n%s", res.Fixed, tt.wantFixed)
			}
			if len(res.Stale) != tt.wantStale {
				t.Errorf("got %d stale blocks, want %d", len(res.Stale), tt.wantStale)
			}
			if !slices.Equal(probs, tt.wantProblems) {
				t.Errorf("got problems %q, want %q", probs, tt.wantProblems)
			}
		})
	}
}

// The command rewrites stale blocks, and -check only reports them.
func TestRunFixesAndChecks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "go.mod", "module "+module+"\n")
	write(t, root, "main.go", "package main\n\n// region: main\nfunc main() {}\n// endregion: main\n")
	stale := "# Doc\n\n<!-- include: main.go#main -->\n```go\nfunc main() { old() }\n```\n"
	write(t, root, "docs/a.md", stale)

	var out strings.Builder
	if err := run([]string{"-check", "-root", root}, &out); !errors.Is(err, errFailed) {
		t.Fatalf("got -check error %v, want %v", err, errFailed)
	}
	if want := "docs/a.md:3: block differs from main.go#main; run `go run ./hack/docs`\n"; out.String() != want {
		t.Errorf("got -check output %q, want %q", out.String(), want)
	}
	if got := read(t, root, "docs/a.md"); got != stale {
		t.Errorf("-check changed the file:\n%s", got)
	}

	out.Reset()
	if err := run([]string{"-root", root}, &out); err != nil {
		t.Fatalf("got fix error %v, want nil; output:\n%s", err, out.String())
	}
	want := "# Doc\n\n<!-- include: main.go#main -->\n```go\nfunc main() {}\n```\n"
	if got := read(t, root, "docs/a.md"); got != want {
		t.Errorf("got fixed file\n%s\nwant\n%s", got, want)
	}

	out.Reset()
	if err := run([]string{"-check", "-root", root}, &out); err != nil {
		t.Errorf("got -check error %v after the fix, want nil; output:\n%s", err, out.String())
	}
}

func TestRunRewritesOnlyTheNamedFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, "main.go", "package main\n\n// region: main\nfunc main() {}\n// endregion: main\n")
	stale := "<!-- include: main.go#main -->\n```go\n```\n"
	write(t, root, "docs/a.md", stale)
	write(t, root, "docs/b.md", stale)

	var out strings.Builder
	if err := run([]string{"-root", root, filepath.Join(root, "docs", "a.md")}, &out); err != nil {
		t.Fatalf("got error %v, want nil; output:\n%s", err, out.String())
	}
	if got, want := read(t, root, "docs/a.md"), "<!-- include: main.go#main -->\n```go\nfunc main() {}\n```\n"; got != want {
		t.Errorf("got docs/a.md\n%s\nwant\n%s", got, want)
	}
	if got := read(t, root, "docs/b.md"); got != stale {
		t.Errorf("got docs/b.md rewritten although not named:\n%s", got)
	}
	if err := run([]string{"-root", root, filepath.Join(root, "..", "elsewhere.md")}, &out); err == nil {
		t.Error("got no error for a file outside the repository, want one")
	}
}

func TestRunFailsWithoutIncludes(t *testing.T) {
	root := t.TempDir()
	write(t, root, "README.md", "# Nothing quoted\n")
	var out strings.Builder
	if err := run([]string{"-check", "-root", root}, &out); !errors.Is(err, errFailed) {
		t.Fatalf("got error %v, want %v", err, errFailed)
	}
	if !strings.Contains(out.String(), "no include found") {
		t.Errorf("got output %q, want it to say no include was found", out.String())
	}
}

func TestFindRoot(t *testing.T) {
	root := t.TempDir()
	write(t, root, "go.mod", "module "+module+"\n\ngo 1.26.0\n")
	write(t, root, "hack/docs/x", "")
	write(t, root, "hack/docs/go.mod", "module example.com/other\n")
	got, err := findRoot(filepath.Join(root, "hack", "docs"))
	if err != nil || got != root {
		t.Errorf("got %q, %v; want %q", got, err, root)
	}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
