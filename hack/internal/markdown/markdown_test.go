package markdown_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/hack/internal/markdown"
)

func TestLinks(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want []string
	}{
		{
			name: "inline links and images",
			md:   "See [the doc](docs/a.md) and ![a chart](img/c.png \"title\").",
			want: []string{"1:docs/a.md", "1:img/c.png"},
		},
		{
			name: "a link whose text is code",
			md:   "[`controller`](kooper/controller/doc.go)",
			want: []string{"1:kooper/controller/doc.go"},
		},
		{
			name: "an image inside a link",
			md:   "[![badge](img/b.svg)](https://example.com)",
			want: []string{"1:img/b.svg", "1:https://example.com"},
		},
		{
			name: "angle brackets, reference definitions and HTML",
			md:   "[a](<my file.md>)\n[ref]: ../x.md\n<img alt=\"x\" src=\"img/a.png\"> <a href='b.md'>b</a>",
			want: []string{"1:my file.md", "2:../x.md", "3:img/a.png", "3:b.md"},
		},
		{
			name: "nothing in fenced blocks, code spans or comments",
			md:   "```md\n[a](gone.md)\n```\n`[b](gone.md)` <!-- [c](gone.md) -->\n<!--\n[d](gone.md)\n-->\n[e](here.md)",
			want: []string{"8:here.md"},
		},
		{
			name: "a double-backtick span may hold a backtick",
			md:   "`` a ` [x](gone.md) `` [y](here.md)",
			want: []string{"1:here.md"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range markdown.Links(strings.Split(tt.md, "\n")) {
				got = append(got, fmt.Sprintf("%d:%s", l.Line, l.Target))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		target  string
		want    string
		wantErr string
	}{
		{name: "relative to the linking file", file: "docs/a.md", target: "../kooper/controller/doc.go", want: "kooper/controller/doc.go"},
		{name: "anchors and queries are dropped", file: "README.md", target: "docs/a.md?plain=1#usage", want: "docs/a.md"},
		{name: "a leading slash is the repository root", file: "docs/a.md", target: "/LICENSE", want: "LICENSE"},
		{name: "escaped characters are unescaped", file: "README.md", target: "docs/my%20file.md", want: "docs/my file.md"},
		{name: "a directory", file: "operators/README.md", target: "shop/", want: "operators/shop"},
		{name: "a pure anchor is skipped", file: "README.md", target: "#get-started"},
		{name: "URLs are skipped", file: "README.md", target: "https://kwok.sigs.k8s.io"},
		{name: "mailto is skipped", file: "README.md", target: "mailto:a@example.com"},
		{name: "leaving the repository is an error", file: "docs/a.md", target: "../../etc/passwd", wantErr: `link "../../etc/passwd" leaves the repository`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := markdown.Resolve(tt.file, tt.target)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.wantErr {
				t.Errorf("got %q, %q; want %q, %q", got, gotErr, tt.want, tt.wantErr)
			}
		})
	}
}

func TestIncludes(t *testing.T) {
	md := "<!-- include: a/b.go#r -->\n```go\n<!-- include: in/fence.go -->\n```\n  <!-- include: c.yaml -->\n<!-- include: not alone --> text\n"
	var got []string
	for _, in := range markdown.Includes(strings.Split(md, "\n")) {
		got = append(got, fmt.Sprintf("%d:%s#%s", in.Line, in.Path, in.Region))
	}
	if want := []string{"1:a/b.go#r", "5:c.yaml#"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
