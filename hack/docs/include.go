package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kooperkit/kooper/hack/internal/inventory"
	"github.com/kooperkit/kooper/hack/internal/markdown"
)

// Errors of region extraction; tests match them with errors.Is.
var (
	errNoRegion        = errors.New("region not found")
	errNoEndRegion     = errors.New("region has no endregion")
	errDupRegion       = errors.New("region is marked twice")
	errEmptyRegion     = errors.New("region is empty")
	errBadMarker       = errors.New("region marker without a name")
	errEndBeforeRegion = errors.New("endregion before its region")
)

// commentPrefixes returns the line-comment prefixes that can start a region
// marker in file: "//" for Go and C-like files, "#" for YAML,
// shell, Makefiles and the like, both for anything else.
func commentPrefixes(file string) []string {
	base := filepath.Base(file)
	switch ext := strings.ToLower(filepath.Ext(base)); {
	case ext == ".go", ext == ".c", ext == ".h", ext == ".proto", ext == ".js", ext == ".ts":
		return []string{"//"}
	case ext == ".yaml", ext == ".yml", ext == ".sh", ext == ".bash", ext == ".mk", ext == ".toml",
		ext == ".py", ext == ".rules", base == "Makefile", base == "Dockerfile":
		return []string{"#"}
	default:
		return []string{"//", "#"}
	}
}

// marker is a parsed "// region: NAME" or "// endregion: NAME" line.
type marker struct {
	end  bool
	name string
}

// parseMarker reports whether line, once trimmed, is a region marker with
// one of prefixes. A marker keyword without a name is an error, so that a
// bare "// endregion" is not silently taken for text.
func parseMarker(line string, prefixes []string) (marker, bool, error) {
	t := strings.TrimSpace(line)
	for _, p := range prefixes {
		rest, ok := strings.CutPrefix(t, p)
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		for _, kw := range []string{"region", "endregion"} {
			if rest == kw || rest == kw+":" {
				return marker{}, false, errBadMarker
			}
			name, ok := strings.CutPrefix(rest, kw+":")
			if !ok {
				continue
			}
			name = strings.TrimSpace(name)
			if strings.ContainsAny(name, " \t") {
				return marker{}, false, nil // prose such as "// region: the EU", not a marker
			}
			return marker{end: kw == "endregion", name: name}, true, nil
		}
	}
	return marker{}, false, nil
}

// extractRegion returns the text of region name in src, the content of the
// file named file: the lines between "region: name" and "endregion: name",
// without the marker lines of any region or operator (an operator's marker
// at the end of a line is cut off), dedented by their common leading
// whitespace, without blank lines at either end, each ending in a newline.
// An empty name is the whole file.
func extractRegion(file string, src []byte, name string) (string, error) {
	lines := strings.Split(string(src), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the file's final newline
	}
	prefixes := commentPrefixes(file)
	start, end := -1, len(lines)
	if name != "" {
		end = -1
	}
	isMarker := make([]bool, len(lines))
	for i, line := range lines {
		m, ok, err := parseMarker(line, prefixes)
		if err != nil {
			return "", fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		isMarker[i] = ok
		if !ok || name == "" || m.name != name {
			continue
		}
		switch {
		case !m.end && start >= 0, m.end && end >= 0:
			return "", fmt.Errorf("%s:%d: %w: %s", file, i+1, errDupRegion, name)
		case !m.end:
			start = i
		case start < 0:
			return "", fmt.Errorf("%s:%d: %w: %s", file, i+1, errEndBeforeRegion, name)
		default:
			end = i
		}
	}
	switch {
	case start < 0 && name != "":
		return "", fmt.Errorf("%s: %w: %s", file, errNoRegion, name)
	case end < 0:
		return "", fmt.Errorf("%s:%d: %w: %s", file, start+1, errNoEndRegion, name)
	}
	var body []string
	for i := start + 1; i < end; i++ {
		if isMarker[i] {
			continue
		}
		// What an operator's marker says is for make remove-operator, not
		// for the reader.
		l, alone := inventory.StripMarker(lines[i])
		if !alone {
			body = append(body, l)
		}
	}
	body = dedent(body)
	// Blank lines at either end are dropped: a marker kept apart from a doc
	// comment by a blank line must not make the doc comment its own.
	for len(body) > 0 && body[0] == "" {
		body = body[1:]
	}
	for len(body) > 0 && body[len(body)-1] == "" {
		body = body[:len(body)-1]
	}
	if len(body) == 0 {
		return "", fmt.Errorf("%s: %w: %s", file, errEmptyRegion, name)
	}
	return strings.Join(body, "\n") + "\n", nil
}

// dedent removes the longest run of leading whitespace that every non-blank
// line starts with (a tab and a space are different characters), and empties
// blank lines.
func dedent(lines []string) []string {
	prefix, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ws := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = ws, false
			continue
		}
		n := 0
		for n < len(prefix) && n < len(ws) && prefix[n] == ws[n] {
			n++
		}
		prefix = prefix[:n]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			out[i] = l[len(prefix):]
		}
	}
	return out
}

// An include is a block of a Markdown file quoted from a source file.
type include struct {
	File   string // the Markdown file, relative to the root, slash-separated
	Line   int    // of the include comment, 1-based
	Path   string // the source file, relative to the root, slash-separated
	Region string // empty for the whole file
}

// ref is how a problem names the include: "path#region" or "path".
func (in include) ref() string {
	if in.Region == "" {
		return in.Path
	}
	return in.Path + "#" + in.Region
}

// block is a fenced code block of a Markdown file.
type block struct {
	Open, Close int    // line indexes of the opening and closing fences
	Indent      string // the opening fence's indentation
	Fence       string // "```" or "~~~", possibly longer
	Lang        string // first word of the info string, lowercased
	Include     *include
}

// content returns the block's text as it compares with a region: its lines
// without the fence's indentation, each ending in a newline.
func (b block) content(lines []string) string {
	var sb strings.Builder
	for _, l := range lines[b.Open+1 : b.Close] {
		if strings.TrimSpace(l) == "" {
			l = ""
		}
		sb.WriteString(strings.TrimPrefix(l, b.Indent))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// A problem is something wrong in a Markdown file, at a line.
type problem struct {
	File string
	Line int
	Msg  string
}

func (p problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
}

// parseMarkdown returns the fenced blocks of a Markdown file, with their
// include comment if they have one, and what is malformed: an include not
// immediately followed by a fence, an include naming no file, an unclosed
// fence.
func parseMarkdown(file string, lines []string) ([]block, []problem) {
	var blocks []block
	var problems []problem
	var pending *include // the include comment on the line before
	for i := 0; i < len(lines); i++ {
		if m := markdown.IncludeComment.FindStringSubmatch(strings.TrimSpace(lines[i])); m != nil {
			in, err := parseInclude(m[1])
			switch {
			case err != nil:
				problems = append(problems, problem{file, i + 1, err.Error()})
			case i+1 == len(lines) || markdown.OpeningFence(lines[i+1]) == nil:
				problems = append(problems, problem{file, i + 1, "include is not immediately followed by a fenced block"})
			default:
				in.File, in.Line = file, i+1
				pending = &in
			}
			continue
		}
		m := markdown.OpeningFence(lines[i])
		if m == nil {
			continue
		}
		b := block{Open: i, Close: -1, Indent: m[1], Fence: m[2], Include: pending}
		pending = nil
		if f := strings.Fields(m[3]); len(f) > 0 {
			b.Lang = strings.ToLower(f[0])
		}
		for j := i + 1; j < len(lines); j++ {
			if markdown.ClosesFence(lines[j], b.Fence) {
				b.Close = j
				break
			}
		}
		if b.Close < 0 {
			problems = append(problems, problem{file, i + 1, "fenced block is never closed"})
			break
		}
		blocks = append(blocks, b)
		i = b.Close
	}
	return blocks, problems
}

// parseInclude parses the PATH#NAME of an include comment.
func parseInclude(s string) (include, error) {
	p, region, hasRegion := strings.Cut(s, "#")
	switch {
	case p == "" || strings.ContainsAny(s, " \t"):
		return include{}, fmt.Errorf("include %q: want <!-- include: PATH#REGION --> with PATH relative to the repository root", s)
	case hasRegion && region == "":
		return include{}, fmt.Errorf("include %q: empty region name after #", s)
	case path.IsAbs(p) || strings.Contains(p, `\`) || !filepath.IsLocal(filepath.FromSlash(p)):
		return include{}, fmt.Errorf("include %q: the path must be relative to the repository root and stay inside it", s)
	}
	return include{Path: path.Clean(p), Region: region}, nil
}

// fileResult is what processing one Markdown file found.
type fileResult struct {
	Includes []include
	Stale    []include // blocks that differ from their region
	Problems []problem // what rewriting cannot fix
	// Fixed is the file with every stale block rewritten from its region.
	Fixed []byte
}

// processFile checks the include blocks of the Markdown file rel (relative
// to root) against their regions and computes the fixed file. With
// requireGo, every go block must be an include.
func processFile(root, rel string, src []byte, requireGo bool) fileResult {
	lines := strings.Split(string(src), "\n")
	blocks, problems := parseMarkdown(rel, lines)
	res := fileResult{Problems: problems}
	out := make([]string, 0, len(lines))
	next := 0 // first line of lines not yet copied to out
	for _, b := range blocks {
		if b.Include == nil {
			if requireGo && (b.Lang == "go" || b.Lang == "golang") {
				res.Problems = append(res.Problems, problem{rel, b.Open + 1,
					"go block is not an include: quote it from a compiled file with <!-- include: PATH#REGION --> and run `go run ./hack/docs`"})
			}
			continue
		}
		in := *b.Include
		res.Includes = append(res.Includes, in)
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(in.Path)))
		if err != nil {
			res.Problems = append(res.Problems, problem{rel, in.Line, fmt.Sprintf("include %s: %v", in.ref(), err)})
			continue
		}
		want, err := extractRegion(in.Path, src, in.Region)
		if err != nil {
			res.Problems = append(res.Problems, problem{rel, in.Line, fmt.Sprintf("include %s: %v", in.ref(), err)})
			continue
		}
		if b.content(lines) == want {
			continue
		}
		if fenceIn(want, b.Fence) {
			res.Problems = append(res.Problems, problem{rel, in.Line, fmt.Sprintf("include %s: the region has a line starting with %s; open the block with a longer fence", in.ref(), b.Fence)})
			continue
		}
		res.Stale = append(res.Stale, in)
		out = append(out, lines[next:b.Open+1]...)
		for _, l := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
			if l != "" {
				l = b.Indent + l
			}
			out = append(out, l)
		}
		next = b.Close
	}
	out = append(out, lines[next:]...)
	res.Fixed = []byte(strings.Join(out, "\n"))
	return res
}

// fenceIn reports whether a line of text would close a block opened by
// fence.
func fenceIn(text, fence string) bool {
	for _, l := range strings.Split(text, "\n") {
		if markdown.ClosesFence(l, fence) {
			return true
		}
	}
	return false
}
