package inventory

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// marker returns a marker comment of kind ("", "-begin" or "-end") for
// operator name, built at run time so that this file holds none.
func marker(kind, name string) string { return "+kooper:" + "operator" + kind + "=" + name }

func TestMarks(t *testing.T) {
	tests := []struct {
		name         string
		lines        []string
		want         []string // kind:name:line
		wantProblems []string
	}{
		{
			name:  "a marker alone on its line gives the whole file",
			lines: []string{"package x", "", "// " + marker("", "shop")},
			want:  []string{"file:shop:3"},
		},
		{
			name:  "a marker after other text gives that line, in each comment syntax",
			lines: []string{`"shop": {A, B}, // ` + marker("", "shop"), "- shop.yaml # " + marker("", "shop"), "| row | <!-- " + marker("", "shop") + " -->"},
			want:  []string{"line:shop:1", "line:shop:2", "line:shop:3"},
		},
		{
			name:  "begin and end markers give a block; blocks of two operators may nest",
			lines: []string{"<!-- " + marker("-begin", "shop") + " -->", "# " + marker("-begin", "bank"), "x", "# " + marker("-end", "bank"), "<!-- " + marker("-end", "shop") + " -->"},
			want:  []string{"begin:shop:1", "begin:bank:2", "end:bank:4", "end:shop:5"},
		},
		{
			name:  "a marker inside a line is text, and so is a name that is no DNS label",
			lines: []string{"see " + marker("", "shop") + " here", "// " + marker("", "Shop"), "// " + marker("", "<name>")},
		},
		{
			name: "malformed blocks are problems",
			lines: []string{
				"x // " + marker("-begin", "shop"),
				"# " + marker("-end", "bank"),
				"# " + marker("-begin", "cart"),
				"# " + marker("-begin", "cart"),
			},
			want: []string{"begin:cart:3"},
			wantProblems: []string{
				"line 1: the begin marker of shop must be alone on its line",
				"line 2: the block of bank ends without beginning",
				"line 3: the block of cart never ends",
				"line 4: a block of cart begins inside its block of line 3",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, problems := marks(tt.lines)
			var got []string
			for _, m := range ms {
				got = append(got, m.kind+":"+m.name+":"+itoa(m.line+1))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got marks %q, want %q", got, tt.want)
			}
			if !slices.Equal(problems, tt.wantProblems) {
				t.Errorf("got problems %q, want %q", problems, tt.wantProblems)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestCut(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{
			name:  "a marked line goes, another operator's stays",
			lines: []string{"a", "b // " + marker("", "shop"), "c // " + marker("", "bank")},
			want:  []string{"a", "c // " + marker("", "bank")},
		},
		{
			name: "a block goes with its markers, and one of the blank lines around it",
			lines: []string{"para", "", "<!-- " + marker("-begin", "shop") + " -->", "## Shop", "", "text",
				"<!-- " + marker("-end", "shop") + " -->", "", "next"},
			want: []string{"para", "", "next"},
		},
		{
			name:  "another operator's block inside goes with it",
			lines: []string{"# " + marker("-begin", "shop"), "# " + marker("-begin", "bank"), "x", "# " + marker("-end", "bank"), "# " + marker("-end", "shop"), "y"},
			want:  []string{"y"},
		},
		{
			name:  "a block inside another operator's goes alone",
			lines: []string{"# " + marker("-begin", "bank"), "# " + marker("-begin", "shop"), "x", "# " + marker("-end", "shop"), "z", "# " + marker("-end", "bank")},
			want:  []string{"# " + marker("-begin", "bank"), "z", "# " + marker("-end", "bank")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, problems := marks(tt.lines)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if got := cut(tt.lines, ms, "shop"); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestStripMarker(t *testing.T) {
	tests := []struct {
		line      string
		want      string
		wantAlone bool
	}{
		{line: `	"shop": {Library, Shop},   // ` + marker("", "shop"), want: `	"shop": {Library, Shop},`},
		{line: "	// " + marker("-begin", "shop"), wantAlone: true},
		{line: "<!-- " + marker("", "shop") + " -->", wantAlone: true},
		{line: "no marker // here", want: "no marker // here"},
	}
	for _, tt := range tests {
		got, alone := StripMarker(tt.line)
		if got != tt.want || alone != tt.wantAlone {
			t.Errorf("StripMarker(%q) = %q, %t; want %q, %t", tt.line, got, alone, tt.want, tt.wantAlone)
		}
	}
}

func TestUnlink(t *testing.T) {
	tests := []struct {
		name, line, target, want string
		ok                       bool
	}{
		{"an inline link becomes its text", "Read [the shop tutorial](tutorial-shop.md#intro) first.", "tutorial-shop.md#intro", "Read the shop tutorial first.", true},
		{"code in the text stays", "See [`shop`](../operators/shop/README.md).", "../operators/shop/README.md", "See `shop`.", true},
		{"an image goes", "![chart](img/shop.png) Chart.", "img/shop.png", " Chart.", true},
		{"other links stay", "[a](a.md) and [b](shop.md)", "shop.md", "[a](a.md) and b", true},
		{"a reference definition is not unlinked", "[shop]: shop.md", "shop.md", "[shop]: shop.md", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := unlink(tt.line, tt.target)
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %q, %t; want %q, %t", got, ok, tt.want, tt.ok)
			}
		})
	}
}
