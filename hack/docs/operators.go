package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kooperkit/kooper/hack/internal/markdown"
)

// The marker lines of a generated operators list. Between them stands a
// table of every operator, so that an operator scaffolded by make
// new-operator gets its row from make generate.
const (
	listBegin = markdown.ListBegin
	listEnd   = markdown.ListEnd
)

// An operator is a directory operators/NAME holding cmd/NAME/.
type operator struct {
	Name    string
	Summary string // the first sentence of its README, ready for a table cell
}

// A list is a generated operators list of a Markdown file.
type list struct {
	File string // relative to the root, slash-separated
	Line int    // of the begin marker, 1-based
}

// listOperators returns the operators of root sorted by name, and a problem
// for each whose README is missing or does not start with a paragraph.
func listOperators(root string) ([]operator, []problem, error) {
	entries, err := os.ReadDir(filepath.Join(root, "operators"))
	if err != nil {
		return nil, nil, fmt.Errorf("could not list the operators: %w", err)
	}
	var ops []operator
	var problems []problem
	for _, e := range entries { // sorted by name
		name := e.Name()
		if !e.IsDir() || name == "internal" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, "operators", name, "cmd", name)); err != nil || !fi.IsDir() {
			continue
		}
		readme := path.Join("operators", name, "README.md")
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(readme)))
		if errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, problem{readme, 0, "missing: the operators list takes the operator's summary from it"})
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("could not read the README of operator %s: %w", name, err)
		}
		s := summary(string(src))
		if s == "" {
			problems = append(problems, problem{readme, 0, "no paragraph after the # title: the operators list takes its first sentence"})
			continue
		}
		ops = append(ops, operator{Name: name, Summary: s})
	}
	return ops, problems, nil
}

// summary returns the first sentence of the first paragraph after the "# "
// title of a README, its lines joined, its links flattened to their text
// and its pipes escaped, or "" if what follows the title is not a
// paragraph.
func summary(readme string) string {
	lines := strings.Split(readme, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "# ") }) + 1
	if i == 0 {
		return ""
	}
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	var para []string
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		para = append(para, strings.TrimSpace(lines[i]))
	}
	if len(para) == 0 || markdown.OpeningFence(para[0]) != nil || strings.HasPrefix(para[0], "#") || strings.HasPrefix(para[0], "|") {
		return ""
	}
	s := linkRE.ReplaceAllString(strings.Join(para, " "), "$1")
	return strings.ReplaceAll(firstSentence(s), "|", `\|`)
}

// linkRE matches an inline link [text](url), a reference link
// [text][name] or an image: relative URLs would break when quoted from
// another directory, so a summary keeps the text only.
var linkRE = regexp.MustCompile(`!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])`)

// firstSentence returns s up to and including the first ". " followed by an
// uppercase letter outside code spans, or all of s: a dot in
// `example.com/v1` or in a domain does not end a sentence.
func firstSentence(s string) string {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '`':
			n, _ := markdown.CodeSpan(s[i:])
			i += n - 1
		case '.':
			if next, ok := strings.CutPrefix(s[i+1:], " "); ok {
				if r, _ := utf8.DecodeRuneInString(next); unicode.IsUpper(r) {
					return s[:i+1]
				}
			}
		}
	}
	return s
}

// operatorsTable returns the lines between the markers of a list in the
// Markdown file rel: the table of ops, linking each README relative to rel,
// between blank lines.
func operatorsTable(rel string, ops []operator) []string {
	lines := []string{"", "| operator | what it is |", "|---|---|"}
	for _, op := range ops {
		readme := path.Join("operators", op.Name, "README.md")
		link := "/" + readme // relative to the root; only if rel were not
		if r, err := filepath.Rel(filepath.FromSlash(path.Dir(rel)), filepath.FromSlash(readme)); err == nil {
			link = filepath.ToSlash(r)
		}
		lines = append(lines, fmt.Sprintf("| [%s](%s) | %s |", op.Name, link, op.Summary))
	}
	return append(lines, "")
}

// fillLists rewrites the operators lists of the Markdown file rel, whose
// lines are lines, with the table of ops. It returns the file's lines
// fixed, its lists, those that differed, and a problem for a begin marker
// without its end marker. Markers inside fenced blocks are text.
func fillLists(rel string, lines []string, ops []operator) (fixed []string, lists, stale []list, problems []problem) {
	table := operatorsTable(rel, ops)
	var fence string // the open fence, "" outside a fenced block
	next := 0        // first line of lines not yet copied to fixed
	for i := 0; i < len(lines); i++ {
		if fence != "" {
			if markdown.ClosesFence(lines[i], fence) {
				fence = ""
			}
			continue
		}
		if m := markdown.OpeningFence(lines[i]); m != nil {
			fence = m[2]
			continue
		}
		if strings.TrimSpace(lines[i]) != listBegin {
			continue
		}
		end := slices.IndexFunc(lines[i+1:], func(l string) bool { return strings.TrimSpace(l) == listEnd })
		if end < 0 {
			problems = append(problems, problem{rel, i + 1, "operators list has no end marker " + listEnd})
			break
		}
		end += i + 1
		l := list{rel, i + 1}
		lists = append(lists, l)
		if !slices.Equal(lines[i+1:end], table) {
			stale = append(stale, l)
			fixed = append(append(fixed, lines[next:i+1]...), table...)
			next = end
		}
		i = end
	}
	return append(fixed, lines[next:]...), lists, stale, problems
}
