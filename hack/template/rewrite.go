package main

import (
	"slices"
	"strings"
)

// A rule replaces a name by another where it stands as a name: its
// neighbours must not make it part of a longer one.
type rule struct {
	old, new string
	// what is replaced, for the report: "module path", ...
	what string
	// before reports whether the byte before an occurrence (0 at the start
	// of the text) lets it stand; after, the rest of the text after it.
	before func(b byte) bool
	after  func(rest string) bool
}

// pathChar reports whether b can be part of a module path element.
func pathChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '-' || b == '_' || b == '~'
}

// labelChar reports whether b can be part of a DNS label.
func labelChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-'
}

// endsPath reports whether rest, what follows a module path, ends it: an
// element follows, or nothing that a path element could hold, or a dot
// that ends a sentence.
func endsPath(rest string) bool {
	switch {
	case rest == "":
		return true
	case rest[0] == '/':
		return true
	case rest[0] == '.':
		return len(rest) == 1 || !pathChar(rest[1])
	}
	return !pathChar(rest[0])
}

// endsDomain reports whether rest, what follows a domain name written with
// sep between labels ("." plain, `\.` or `\\.` in regular expressions),
// ends it: no label character, and no separator followed by a label.
func endsDomain(sep string) func(rest string) bool {
	return func(rest string) bool {
		if rest == "" {
			return true
		}
		if r, ok := strings.CutPrefix(rest, sep); ok {
			return r == "" || !labelChar(r[0])
		}
		return !labelChar(rest[0])
	}
}

// beginsDomainSuffix reports whether b, the byte before a domain suffix,
// lets it stand: the dot of a label in front of it (the group's own, as
// in shop.example.org), or no label character at all (the suffix alone).
func beginsDomainSuffix(b byte) bool { return b == 0 || b == '.' || !labelChar(b) }

// apply replaces, in one pass, every occurrence of each rule's old name
// that stands as a name, and counts the replacements by rule. Where two
// rules match at one place, the longer old name wins.
func apply(text string, rules []rule) (string, map[string]int) {
	type hit struct {
		at int
		r  *rule
	}
	var hits []hit
	for i := range rules {
		r := &rules[i]
		if r.old == "" || r.old == r.new {
			continue
		}
		for off := 0; ; {
			j := strings.Index(text[off:], r.old)
			if j < 0 {
				break
			}
			at := off + j
			var prev byte
			if at > 0 {
				prev = text[at-1]
			}
			if at > 1 && text[at-2] == '\\' && strings.IndexByte("nrtv", prev) >= 0 {
				prev = ' ' // an escape sequence in a string literal separates
			}
			if r.before(prev) && r.after(text[at+len(r.old):]) {
				hits = append(hits, hit{at, r})
			}
			off = at + 1
		}
	}
	if len(hits) == 0 {
		return text, nil
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.at != b.at {
			return a.at - b.at
		}
		return len(b.r.old) - len(a.r.old)
	})
	counts := map[string]int{}
	var sb strings.Builder
	next := 0
	for _, h := range hits {
		if h.at < next {
			continue // inside a longer match
		}
		sb.WriteString(text[next:h.at])
		sb.WriteString(h.r.new)
		next = h.at + len(h.r.old)
		counts[h.r.what]++
	}
	sb.WriteString(text[next:])
	return sb.String(), counts
}

// reversed is a module path in OpenAPI's form, which
// +k8s:openapi-model-package wants and hack/codegen/generate.sh computes:
// the first element's labels reversed, then the others, joined with dots
// (github.com/shopco/shop: com.github.shopco.shop).
func reversed(module string) string {
	host, rest, _ := strings.Cut(module, "/")
	labels := strings.Split(host, ".")
	slices.Reverse(labels)
	out := strings.Join(labels, ".")
	if rest != "" {
		out += "." + strings.ReplaceAll(rest, "/", ".")
	}
	return out
}

// renameRules are the rules of a rename: the module path in its two
// forms, the API groups' suffix in its three (plain, escaped once in a
// regular expression, escaped twice in a Go or YAML string holding one)
// and the image registry.
func renameRules(oldModule, newModule, oldSuffix, newSuffix, oldRegistry, newRegistry string) []rule {
	rules := []rule{
		{old: oldModule, new: newModule, what: "module path",
			before: func(b byte) bool { return b == 0 || !pathChar(b) }, after: endsPath},
		// In OpenAPI's form, a dot joins the packages below the module.
		{old: reversed(oldModule), new: reversed(newModule), what: "module path in OpenAPI's form",
			before: func(b byte) bool { return b == 0 || !pathChar(b) },
			after:  func(rest string) bool { return rest == "" || rest[0] == '.' || !pathChar(rest[0]) }},
		{old: oldRegistry, new: newRegistry, what: "image registry",
			before: func(b byte) bool { return b == 0 || !pathChar(b) }, after: endsPath},
	}
	for _, sep := range []string{".", `\.`, `\\.`} {
		what := map[string]string{".": "API group suffix", `\.`: `API group suffix, escaped (\.)`, `\\.`: `API group suffix, escaped twice (\\.)`}[sep]
		rules = append(rules, rule{
			old: strings.ReplaceAll(oldSuffix, ".", sep), new: strings.ReplaceAll(newSuffix, ".", sep), what: what,
			before: beginsDomainSuffix, after: endsDomain(sep),
		})
	}
	return rules
}
