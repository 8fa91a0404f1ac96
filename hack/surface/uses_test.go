package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

func TestMeasureUses(t *testing.T) {
	u, err := measureUses(filepath.Join("testdata", "uses", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range u.TypeErrors {
		t.Errorf("testdata/uses/main.go does not compile: %v", e)
	}
	if u.Lines != 21 {
		t.Errorf("got %d lines, want 21", u.Lines)
	}
	want := []string{
		"controller.Config",                   // a package-qualified name
		"controller.Config.ConcurrentWorkers", // a field selected on a value
		"controller.Config.Handler",           // composite-literal keys
		"controller.Config.Name",
		"controller.Config.Retriever",
		"controller.Controller.Run", // a method of a value New returned
		"controller.Handler",
		"controller.Handler.Handle", // an interface's method
		"controller.HandlerFunc",
		"controller.New",
		"controllertest.NewRetriever",
	}
	if !slices.Equal(u.Identifiers, want) {
		t.Errorf("got identifiers\n%q\nwant\n%q", u.Identifiers, want)
	}
}

func TestRunUses(t *testing.T) {
	var b bytes.Buffer
	if err := run([]string{"-uses", filepath.Join("testdata", "uses", "main.go")}, &b); err != nil {
		t.Fatal(err)
	}
	want := "lines 21, library identifiers 11: controller.Config, controller.Config.ConcurrentWorkers, controller.Config.Handler, " +
		"controller.Config.Name, controller.Config.Retriever, controller.Controller.Run, controller.Handler, controller.Handler.Handle, " +
		"controller.HandlerFunc, controller.New, controllertest.NewRetriever\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestCodeLines(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{
			name: "the package clause, imports, blank and comment lines do not count",
			src:  "// Package p.\npackage p\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n// F prints.\nfunc F() {\n\t/* a\n\tblock */\n\tfmt.Println(os.Args) // trailing\n}\n",
			want: 3,
		},
		{
			name: "a single import and a build line do not count",
			src:  "//go:build linux\n\npackage p\n\nimport \"fmt\"\n\nvar _ = fmt.Sprint\n",
			want: 1,
		},
		{
			name: "each line of a raw string counts",
			src:  "package p\n\nconst s = `a\n\nb`\n",
			want: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", tt.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if got := codeLines(fset, f, []byte(tt.src)); got != tt.want {
				t.Errorf("got %d lines, want %d", got, tt.want)
			}
		})
	}
}
