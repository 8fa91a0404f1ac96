package inventory

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// markerRE matches a marker comment at the end of a line: the text before
// it, the kind (empty, -begin or -end) and the operator's name.
var markerRE = regexp.MustCompile(`^(.*?)(?://|#|<!--)\s*\+kooper:operator(-begin|-end)?=([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\s*(?:-->)?\s*$`)

// A mark is one marker of a file.
type mark struct {
	line int    // 0-based
	kind string // "file", "line", "begin" or "end"
	name string // the operator's
}

// marks returns the markers of a file's lines, and what is wrong with
// them: a begin or an end marker after other text, a begin without its
// end, an end without its begin, an operator's block inside its own.
func marks(lines []string) ([]mark, []string) {
	var out []mark
	var problems []string
	open := map[string]int{} // operator → line of its open begin marker
	for i, l := range lines {
		m := markerRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		alone := strings.TrimSpace(m[1]) == ""
		k := mark{line: i, name: m[3]}
		switch {
		case m[2] == "" && alone:
			k.kind = "file"
		case m[2] == "":
			k.kind = "line"
		case !alone:
			problems = append(problems, fmt.Sprintf("line %d: the %s marker of %s must be alone on its line", i+1, strings.TrimPrefix(m[2], "-"), m[3]))
			continue
		case m[2] == "-begin":
			k.kind = "begin"
			if at, ok := open[k.name]; ok {
				problems = append(problems, fmt.Sprintf("line %d: a block of %s begins inside its block of line %d", i+1, k.name, at+1))
				continue
			}
			open[k.name] = i
		default:
			k.kind = "end"
			if _, ok := open[k.name]; !ok {
				problems = append(problems, fmt.Sprintf("line %d: the block of %s ends without beginning", i+1, k.name))
				continue
			}
			delete(open, k.name)
		}
		out = append(out, k)
	}
	for name, at := range open {
		problems = append(problems, fmt.Sprintf("line %d: the block of %s never ends", at+1, name))
	}
	slices.Sort(problems)
	return out, problems
}

// ownerOf returns the operator a file marker gives the whole file to, or
// "".
func ownerOf(ms []mark) string {
	for _, m := range ms {
		if m.kind == "file" {
			return m.name
		}
	}
	return ""
}

// cut returns lines without what the markers give to operator name: the
// marked lines, and each marked block with its markers. When a block stood
// between two blank lines, one of them goes too.
func cut(lines []string, ms []mark, name string) []string {
	drop := make([]bool, len(lines))
	begin := -1
	for _, m := range ms {
		if m.name != name {
			continue
		}
		switch m.kind {
		case "line":
			drop[m.line] = true
		case "begin":
			begin = m.line
		case "end":
			for i := begin; i <= m.line; i++ {
				drop[i] = true
			}
			if begin > 0 && m.line+1 < len(lines) && strings.TrimSpace(lines[begin-1]) == "" && strings.TrimSpace(lines[m.line+1]) == "" {
				drop[m.line+1] = true
			}
		}
	}
	out := make([]string, 0, len(lines))
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l)
		}
	}
	return out
}

// StripMarker returns line without a marker comment at its end, and
// whether line is one alone (a file, begin or end marker, or a line marker
// on a line of nothing else): hack/docs quotes code without them.
func StripMarker(line string) (string, bool) {
	m := markerRE.FindStringSubmatch(line)
	if m == nil {
		return line, false
	}
	if strings.TrimSpace(m[1]) == "" {
		return "", true
	}
	return strings.TrimRight(m[1], " \t"), false
}
