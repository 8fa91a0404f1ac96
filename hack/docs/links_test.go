package main

import (
	"slices"
	"testing"
)

func TestCheckLinks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "README.md", "[docs](docs/) [a](docs/a.md#x) [gone](docs/gone.md) [web](https://example.com)\n")
	write(t, root, "docs/a.md", "[up](../README.md)\n\n<img src=\"img/missing.png\">\n")
	problems, checked, err := checkLinks(root, []string{"README.md", "docs/a.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		`README.md:1: link "docs/gone.md": docs/gone.md does not exist`,
		`docs/a.md:3: link "img/missing.png": docs/img/missing.png does not exist`,
	}
	if !slices.Equal(got, want) || checked != 5 {
		t.Errorf("got %d links checked, problems %q; want 5, %q", checked, got, want)
	}
}
