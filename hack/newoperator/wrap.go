package main

import (
	"regexp"
	"strings"
)

// wrapWidth is the width comments are wrapped at, counting a tab as 4
// columns, as in the rest of the repository.
const wrapWidth = 80

// commentLine is a line holding only a comment: its indentation, the
// comment marker (// or #) and the text.
var commentLine = regexp.MustCompile(`^([ \t]*)(//|#) (\S.*)$`)

// reflow rewraps the paragraphs of full-line comments that the operator's
// names made longer than wrapWidth; other paragraphs are left as written.
// A paragraph is a run of comment lines of one indentation and marker; a
// line that starts with a tab, a space, "+" (a code-generator marker), "-"
// or "region:" stands alone, and so does a line after which code or a blank
// comment line comes.
func reflow(src string) string {
	lines := strings.Split(src, "\n")
	var out []string
	for i := 0; i < len(lines); {
		m := commentLine.FindStringSubmatch(lines[i])
		if m == nil || !prose(m[3]) {
			out = append(out, lines[i])
			i++
			continue
		}
		indent, marker := m[1], m[2]
		words := strings.Fields(m[3])
		long := width(lines[i]) > wrapWidth
		j := i + 1
		for ; j < len(lines); j++ {
			n := commentLine.FindStringSubmatch(lines[j])
			if n == nil || n[1] != indent || n[2] != marker || !prose(n[3]) {
				break
			}
			words = append(words, strings.Fields(n[3])...)
			long = long || width(lines[j]) > wrapWidth
		}
		if !long {
			out = append(out, lines[i:j]...)
			i = j
			continue
		}
		prefix := indent + marker + " "
		line := prefix + words[0]
		for _, w := range words[1:] {
			if width(line)+1+len(w) > wrapWidth {
				out = append(out, line)
				line = prefix + w
				continue
			}
			line += " " + w
		}
		out = append(out, line)
		i = j
	}
	return strings.Join(out, "\n")
}

// prose reports whether comment text can be rewrapped with its neighbours.
func prose(text string) bool {
	for _, p := range []string{"+", "-", "region:", "endregion:", "|"} {
		if strings.HasPrefix(text, p) {
			return false
		}
	}
	return true
}

func width(line string) int {
	return len(line) + 3*strings.Count(line, "\t")
}

// markdownWidth is the width Markdown prose is wrapped at, as in the
// repository's READMEs.
const markdownWidth = 96

// listItem is the marker of a Markdown list item, "- " or "1. ".
var listItem = regexp.MustCompile(`^(- |[0-9]+\. )`)

// reflowMarkdown refills the paragraphs and list items of a Markdown
// document at markdownWidth, so that the operator's names do not leave them
// ragged. Headings, tables, fenced blocks, HTML comments and blank lines
// stay as written.
func reflowMarkdown(src string) string {
	lines := strings.Split(src, "\n")
	var out []string
	var words []string
	first, rest := "", ""
	flush := func() {
		if len(words) == 0 {
			return
		}
		line := first + words[0]
		for _, w := range words[1:] {
			if len(line)+1+len(w) > markdownWidth {
				out = append(out, line)
				line = rest + w
				continue
			}
			line += " " + w
		}
		out = append(out, line)
		words = nil
	}
	fenced := false
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "```"):
			flush()
			fenced = !fenced
			out = append(out, line)
		case fenced || line == "" || strings.HasPrefix(line, "|") || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "<!--"):
			flush()
			out = append(out, line)
		case listItem.MatchString(line):
			flush()
			first = listItem.FindString(line)
			rest = strings.Repeat(" ", len(first))
			words = strings.Fields(line[len(first):])
		case strings.HasPrefix(line, "  ") && len(words) > 0 && first != "":
			words = append(words, strings.Fields(line)...)
		default:
			if len(words) == 0 {
				first, rest = "", ""
			}
			words = append(words, strings.Fields(line)...)
		}
	}
	flush()
	return strings.Join(out, "\n")
}
