package main

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Dockerfile's final stage builds the image this command builds: no
// base, the binary at the same path, the same user, entrypoint and labels,
// with the build arguments in the place of the command's flags. Read as
// text: no Docker needed.
func TestTheDockerfileBuildsThisImage(t *testing.T) {
	stage := finalStage(t)
	// The build arguments make docker-build passes, with the values the
	// command gets from make image.
	args := map[string]string{"OPERATOR": operator, "VERSION": testVersion, "REVISION": testRevision}

	// The image's layout and config do not depend on the binary: a small
	// static program is quicker to compress than the operator.
	img, err := Build(Config{Binary: goProgram(t, "GOOS=linux", "CGO_ENABLED=0"), Name: operator, Version: testVersion, Revision: testRevision, Created: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}

	if stage.from != "scratch" {
		t.Errorf("got final stage FROM %s, want scratch: the image has no layer but the binary's", stage.from)
	}
	if len(layers) != 1 {
		t.Fatalf("the command's image has %d layers, want 1 like FROM scratch and one COPY", len(layers))
	}
	if len(stage.copies) != 1 {
		t.Fatalf("got COPY destinations %q in the final stage, want one, the binary's", stage.copies)
	}
	files := layerFiles(t, layers[0])
	if len(files) != 1 {
		t.Fatalf("the command's layer has %d files, want 1", len(files))
	}
	if want := "/" + files[0].hdr.Name; stage.copies[0] != want {
		t.Errorf("the Dockerfile copies the binary to %s, the command's image holds it at %s", stage.copies[0], want)
	}
	if stage.user != cf.Config.User {
		t.Errorf("got USER %s in the Dockerfile, %s in the command's image", stage.user, cf.Config.User)
	}
	if !slices.Equal(stage.entrypoint, cf.Config.Entrypoint) {
		t.Errorf("got ENTRYPOINT %q in the Dockerfile, %q in the command's image", stage.entrypoint, cf.Config.Entrypoint)
	}
	labels := map[string]string{}
	for k, v := range stage.labels {
		labels[k] = expand(t, v, stage.args, args)
	}
	if !maps.Equal(labels, cf.Config.Labels) {
		t.Errorf("got LABELs %v in the Dockerfile with build args %v, want the command's labels %v", labels, args, cf.Config.Labels)
	}
}

// stage is what of a Dockerfile stage makes the image's layout and config.
type stage struct {
	from       string
	args       map[string]string // ARG NAME=DEFAULT
	copies     []string          // COPY destinations
	user       string
	entrypoint []string
	labels     map[string]string // values as written, ${ARG} unexpanded
}

// finalStage parses the Dockerfile's last stage: the instructions after its
// last FROM, comments dropped and continuation lines joined.
func finalStage(t *testing.T) stage {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// ARGs before the first FROM belong to no stage: collected, then
	// dropped by it.
	s := stage{args: map[string]string{}, labels: map[string]string{}}
	var current string
	apply := func(in string) {
		keyword, rest, _ := strings.Cut(strings.TrimSpace(in), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(keyword) {
		case "FROM":
			s = stage{from: rest, args: map[string]string{}, labels: map[string]string{}}
		case "ARG":
			k, v, _ := strings.Cut(rest, "=")
			s.args[k] = unquote(v)
		case "COPY":
			fields := strings.Fields(rest)
			s.copies = append(s.copies, fields[len(fields)-1])
		case "USER":
			s.user = rest
		case "ENTRYPOINT":
			s.entrypoint = nil
			if err := json.Unmarshal([]byte(rest), &s.entrypoint); err != nil {
				t.Errorf("ENTRYPOINT %s is not the exec form (a JSON array): %v", rest, err)
			}
		case "LABEL":
			for _, kv := range words(t, rest) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Errorf("LABEL %s: %q is not KEY=VALUE", rest, kv)
				}
				s.labels[k] = v
			}
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line, continued := strings.CutSuffix(line, "\\")
		current += " " + line
		if !continued {
			apply(current)
			current = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if s.from == "" {
		t.Fatal("the Dockerfile has no FROM")
	}
	return s
}

// words splits LABEL's arguments at spaces outside double quotes, and drops
// the quotes.
func words(t *testing.T, s string) []string {
	t.Helper()
	var (
		out    []string
		word   strings.Builder
		quoted bool
		inWord bool
	)
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				out = append(out, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Errorf("unbalanced quotes in %q", s)
	}
	if inWord {
		out = append(out, word.String())
	}
	return out
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// expand replaces ${NAME} and $NAME in v with the build argument given, else
// the ARG's default; a name the stage does not declare is an error (Docker
// would expand it to nothing).
func expand(t *testing.T, v string, declared, given map[string]string) string {
	t.Helper()
	return regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`).ReplaceAllStringFunc(v, func(m string) string {
		name := strings.Trim(m, "${}")
		def, ok := declared[name]
		if !ok {
			t.Errorf("LABEL uses %s, which the final stage does not declare with ARG", m)
			return ""
		}
		if g, ok := given[name]; ok {
			return g
		}
		return def
	})
}
