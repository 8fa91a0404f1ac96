package main

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// A link is a reference from a Markdown file to another file or a URL.
type link struct {
	Line   int // 1-based
	Target string
}

var (
	// inlineLinkRE matches the "](target" of [text](target) and
	// ![alt](target), nested or not.
	inlineLinkRE = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^\s)]*)`)
	// refLinkRE matches a link reference definition: [name]: target.
	refLinkRE = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// htmlRefRE matches the src or href attribute of an HTML tag.
	htmlRefRE = regexp.MustCompile(`(?i)<[a-z][^>]*?\s(?:src|href)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
	// schemeRE matches a URL with a scheme (https:, mailto:, ...).
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownLinks returns the links of a Markdown file, outside fenced
// blocks, code spans and HTML comments.
func markdownLinks(lines []string) []link {
	var links []link
	var fence string // the open fence, "" outside a fenced block
	inComment := false
	for i, line := range lines {
		if fence != "" {
			if closesFence(line, fence) {
				fence = ""
			}
			continue
		}
		if !inComment {
			if m := openingFence(line); m != nil {
				fence = m[2]
				continue
			}
		}
		line, inComment = stripComments(line, inComment)
		line = stripCodeSpans(line)
		add := func(target string) {
			links = append(links, link{Line: i + 1, Target: strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")})
		}
		for _, m := range inlineLinkRE.FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
		if m := refLinkRE.FindStringSubmatch(line); m != nil {
			add(m[1])
		}
		for _, m := range htmlRefRE.FindAllStringSubmatch(line, -1) {
			add(m[1] + m[2])
		}
	}
	return links
}

// stripComments removes HTML comments from line; inComment says whether a
// comment opened on an earlier line is still open, before and after.
func stripComments(line string, inComment bool) (string, bool) {
	var sb strings.Builder
	for line != "" {
		if inComment {
			_, after, ok := strings.Cut(line, "-->")
			if !ok {
				return sb.String(), true
			}
			line, inComment = after, false
			continue
		}
		before, after, ok := strings.Cut(line, "<!--")
		sb.WriteString(before)
		if !ok {
			break
		}
		line, inComment = after, true
	}
	return sb.String(), inComment
}

// stripCodeSpans replaces each `code span` of line with "code": what is
// quoted as code is not a link.
func stripCodeSpans(line string) string {
	var sb strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			sb.WriteString(line)
			return sb.String()
		}
		n, closed := codeSpan(line[i:])
		if closed {
			sb.WriteString(line[:i])
			sb.WriteString("code")
		} else { // literal backticks
			sb.WriteString(line[:i+n])
		}
		line = line[i+n:]
	}
}

// codeSpan returns the length of the code span that s starts with (s
// starts with a backtick): through the next run of exactly as many
// backticks, closed. Without such a run the backticks are literal, and n is
// their number.
func codeSpan(s string) (n int, closed bool) {
	n = len(s) - len(strings.TrimLeft(s, "`"))
	ticks, rest := s[:n], s[n:]
	for off := 0; ; {
		j := strings.Index(rest[off:], ticks)
		if j < 0 {
			return n, false
		}
		j += off
		k := j + n
		for k < len(rest) && rest[k] == '`' {
			k++
		}
		if k-j == n {
			return n + k, true
		}
		off = k
	}
}

// resolveLink returns the file a link target of the Markdown file rel names,
// relative to root and slash-separated, or "" if the target is not a file
// of the repository (a URL with a scheme, an anchor in the same file). A
// target starting with / is relative to the root.
func resolveLink(rel, target string) (string, error) {
	if i := strings.IndexAny(target, "#?"); i >= 0 {
		target = target[:i]
	}
	if target == "" || schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return "", nil
	}
	t, err := url.PathUnescape(target)
	if err != nil {
		return "", fmt.Errorf("bad link %q: %w", target, err)
	}
	var p string
	if strings.HasPrefix(t, "/") {
		p = path.Clean(strings.TrimPrefix(t, "/"))
	} else {
		p = path.Join(path.Dir(rel), t)
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) && p != "." {
		return "", fmt.Errorf("link %q leaves the repository", target)
	}
	return p, nil
}

// checkLinks returns a problem for each relative link of the Markdown
// files (relative to root) that names no file or directory, and how many
// links it checked.
func checkLinks(root string, files []string) ([]problem, int, error) {
	var problems []problem
	checked := 0
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, 0, err
		}
		for _, l := range markdownLinks(strings.Split(string(src), "\n")) {
			p, err := resolveLink(rel, l.Target)
			if err != nil {
				problems = append(problems, problem{rel, l.Line, err.Error()})
				continue
			}
			if p == "" {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				problems = append(problems, problem{rel, l.Line, fmt.Sprintf("link %q: %s does not exist", l.Target, p)})
			}
		}
	}
	return problems, checked, nil
}
