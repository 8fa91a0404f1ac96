package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testSourceDateEpoch is the SOURCE_DATE_EPOCH that makeRecorded gives
// make, with VERSION testVersion and REVISION testRevision.
const testSourceDateEpoch = "1700000000"

// call is one run of the go or docker that a make target ran.
type call struct {
	tool string            // go or docker
	dir  string            // its working directory
	env  map[string]string // GOOS, GOARCH, CGO_ENABLED, SOURCE_DATE_EPOCH as it saw them
	args []string
}

// recorder stands for go and docker: it writes each call to the next file
// of $CALLS, the tool, its directory, the four variables of call.env, then the
// arguments, one a line, and does nothing else, so that a target leaves
// bin/ as it is.
const recorder = `#!/bin/sh
n=$(ls "$CALLS" | wc -l)
{
	echo "${0##*/}"
	pwd
	echo "GOOS=${GOOS-}"
	echo "GOARCH=${GOARCH-}"
	echo "CGO_ENABLED=${CGO_ENABLED-}"
	echo "SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH-}"
	printf '%s\n' "$@"
} >"$CALLS/$(printf %04d "$n")"
`

// recordedEnv is how many variables the recorder writes.
const recordedEnv = 4

// makeRecorded runs make with args from the repository root, with go and
// docker replaced by the recorder and VERSION, REVISION and
// SOURCE_DATE_EPOCH set, and returns the calls in their order. The test is
// skipped if the Makefile has no such target yet.
func makeRecorded(t *testing.T, args ...string) []call {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	tools, calls := t.TempDir(), t.TempDir()
	for _, tool := range []string{"go", "docker"} {
		if err := os.WriteFile(filepath.Join(tools, tool), []byte(recorder), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args = append(append([]string{"--no-print-directory", "-C", root}, args...),
		"GO="+filepath.Join(tools, "go"), "DOCKER="+filepath.Join(tools, "docker"),
		"VERSION="+testVersion, "REVISION="+testRevision, "SOURCE_DATE_EPOCH="+testSourceDateEpoch)
	cmd := exec.Command("make", args...)
	cmd.Env = append(os.Environ(), "CALLS="+calls)
	out, err := cmd.CombinedOutput()
	if m := regexp.MustCompile(`No rule to make target '([^']+)'`).FindSubmatch(out); m != nil {
		t.Skipf("the Makefile has no target %s yet", m[1])
	}
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	entries, err := os.ReadDir(calls)
	if err != nil {
		t.Fatal(err)
	}
	var recorded []call
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(calls, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		c := call{tool: lines[0], dir: lines[1], env: map[string]string{}, args: lines[2+recordedEnv:]}
		for _, kv := range lines[2 : 2+recordedEnv] {
			k, v, _ := strings.Cut(kv, "=")
			c.env[k] = v
		}
		recorded = append(recorded, c)
	}
	return recorded
}

// builtBinaries checks the go build calls of recorded, hack/build/build.sh's,
// and returns the platform of each binary they build, by its absolute path.
func builtBinaries(t *testing.T, recorded []call) map[string]v1.Platform {
	t.Helper()
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]v1.Platform{}
	for _, c := range recorded {
		if c.tool != "go" || len(c.args) == 0 || c.args[0] != "build" {
			continue
		}
		if c.dir != absRoot {
			t.Errorf("go build ran in %s, want the repository's root", c.dir)
		}
		if c.env["GOOS"] != "linux" || c.env["CGO_ENABLED"] != "0" {
			t.Errorf("go build ran with GOOS=%q CGO_ENABLED=%q, want linux and 0: an image runs a static linux binary", c.env["GOOS"], c.env["CGO_ENABLED"])
		}
		if !slices.Contains(c.args, "-trimpath") {
			t.Errorf("go build %q: want hack/build/build.sh's flags", c.args)
		}
		i := slices.Index(c.args, "-o")
		if i < 0 || i+1 >= len(c.args) || !strings.HasSuffix(c.args[i+1], "/") {
			t.Fatalf("go build %q: want -o DIR/", c.args)
		}
		arch := cmp.Or(c.env["GOARCH"], runtime.GOARCH)
		for _, pkg := range c.args[i+2:] {
			built[filepath.Join(c.dir, c.args[i+1], filepath.Base(pkg))] = v1.Platform{OS: "linux", Architecture: arch}
		}
	}
	return built
}

// replayed is what replaying a hack/image call made.
type replayed struct {
	operator string
	flags    map[string]string // as the target passed them
	image    v1.Image          // read back from the tarball or the registry
	pinned   string            // what -push printed
}

// replay runs in this process the hack/image command that the go run call
// c ran, on a small program of the platform built names for the binary,
// writing -out into dir and pushing -push to the registry at host instead.
func replay(t *testing.T, c call, built map[string]v1.Platform, dir, host string) replayed {
	t.Helper()
	if filepath.Base(c.dir) != "image" || filepath.Base(filepath.Dir(c.dir)) != "hack" {
		t.Errorf("go run ran in %s, want hack/image", c.dir)
	}
	if c.env["GOOS"] != "" || c.env["GOARCH"] != "" {
		t.Errorf("go run ran with GOOS=%q GOARCH=%q, want neither: the command runs on the host", c.env["GOOS"], c.env["GOARCH"])
	}
	if len(c.args) < 2 || c.args[1] != "." {
		t.Fatalf("got go %q, want go run . FLAGS", c.args)
	}
	var (
		flags = map[string]string{}
		r     = replayed{flags: flags}
		args  []string
	)
	for i := 2; i < len(c.args); i++ {
		k, v, ok := strings.Cut(strings.TrimLeft(c.args[i], "-"), "=")
		if !ok && i+1 < len(c.args) {
			i++
			v = c.args[i]
		}
		flags[k] = v
	}
	binary := filepath.Join(c.dir, flags["binary"])
	platform, ok := built[binary]
	if !ok {
		t.Fatalf("hack/image packages %s, which the target did not build (it built %v)", binary, slices.Collect(maps.Keys(built)))
	}
	r.operator = filepath.Base(binary)
	for k, v := range flags {
		switch k {
		case "binary":
			// A small program of the same platform and name (the image's
			// title): the operator takes seconds to compress.
			prog := goProgram(t, "GOOS=linux", "GOARCH="+platform.Architecture, "CGO_ENABLED=0")
			v = filepath.Join(dir, platform.Architecture, r.operator)
			if err := os.MkdirAll(filepath.Dir(v), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(prog, v); err != nil {
				t.Fatal(err)
			}
		case "out":
			v = filepath.Join(dir, "images", filepath.Base(v))
		case "push":
			_, path, _ := strings.Cut(v, "/") // the registry is the test's
			v = host + "/" + path
		}
		args = append(args, "-"+k, v)
	}
	t.Setenv("SOURCE_DATE_EPOCH", c.env["SOURCE_DATE_EPOCH"])
	stdout, stderr, err := runImage(t, args...)
	if err != nil {
		t.Fatalf("image %q: %v\n%s", args, err, stderr)
	}

	switch {
	case flags["out"] != "":
		tag, err := name.NewTag(flags["tag"])
		if err != nil {
			t.Fatalf("got -tag %q: %v", flags["tag"], err)
		}
		out := args[slices.Index(args, "-out")+1]
		if r.image, err = tarball.ImageFromPath(out, &tag); err != nil {
			t.Fatalf("the tarball has no image tagged %s: %v", tag, err)
		}
	case flags["push"] != "":
		r.pinned = strings.TrimSpace(stdout)
		ref, err := name.NewDigest(r.pinned)
		if err != nil {
			t.Fatalf("-push printed %q, want REPOSITORY@sha256:DIGEST: %v", stdout, err)
		}
		if r.image, err = remote.Image(ref, remote.WithContext(context.Background())); err != nil {
			t.Fatalf("could not pull %s: %v", r.pinned, err)
		}
	default:
		t.Fatalf("hack/image ran with neither -out nor -push: %q", c.args)
	}

	// The image holds what the target asked for.
	cf, err := r.image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		labelTitle:    r.operator,
		labelVersion:  testVersion,
		labelRevision: testRevision,
		labelSource:   DefaultSource,
		labelLicenses: License,
	}
	if !maps.Equal(cf.Config.Labels, want) {
		t.Errorf("got labels %v, want %v (VERSION and REVISION as make got them)", cf.Config.Labels, want)
	}
	if got := fmt.Sprint(cf.Created.Unix()); got != testSourceDateEpoch {
		t.Errorf("got created %v (%s), want SOURCE_DATE_EPOCH %s", cf.Created.Time, got, testSourceDateEpoch)
	}
	if cf.OS != platform.OS || cf.Architecture != platform.Architecture {
		t.Errorf("got platform %s/%s, want the binary's %s/%s", cf.OS, cf.Architecture, platform.OS, platform.Architecture)
	}
	return r
}

// checkDockerBuild checks the docker build calls of make docker-build:
// one per operator, tagged image, with every build argument the
// Dockerfile's final stage labels the image with, and GO_IMAGE (the build
// stage's image, e.g. pinned by digest) when make got one.
func checkDockerBuild(t *testing.T, recorded []call, operators []string, image func(op string) string, goImage string) {
	t.Helper()
	stage := finalStage(t)
	var used []string
	for _, v := range stage.labels {
		for _, m := range regexp.MustCompile(`\$\{?(\w+)\}?`).FindAllStringSubmatch(v, -1) {
			used = append(used, m[1])
		}
	}
	var builds [][]string
	for _, c := range recorded {
		if c.tool == "docker" && len(c.args) > 0 && c.args[0] == "build" {
			builds = append(builds, c.args)
		}
	}
	if len(builds) != len(operators) {
		t.Fatalf("got %d docker builds, want one per operator %q", len(builds), operators)
	}
	for i, args := range builds {
		buildArgs := map[string]string{}
		var tag string
		for j := 1; j < len(args)-1; j++ {
			switch args[j] {
			case "--build-arg":
				k, v, _ := strings.Cut(args[j+1], "=")
				buildArgs[k] = v
				j++
			case "-t":
				tag = args[j+1]
				j++
			}
		}
		op := operators[i]
		want := map[string]string{"OPERATOR": op, "VERSION": testVersion, "REVISION": testRevision}
		if goImage != "" {
			want["GO_IMAGE"] = goImage
		} else if v, ok := buildArgs["GO_IMAGE"]; ok {
			t.Errorf("docker build %q: got --build-arg GO_IMAGE=%q, want the Dockerfile's default", args, v)
		}
		for _, arg := range used {
			if _, ok := buildArgs[arg]; !ok {
				t.Errorf("docker build %q: no --build-arg %s, which the Dockerfile's labels use", args, arg)
			}
		}
		for k, v := range want {
			if buildArgs[k] != v {
				t.Errorf("docker build %q: got --build-arg %s=%q, want %q", args, k, buildArgs[k], v)
			}
		}
		if tag != image(op) {
			t.Errorf("docker build %q: got -t %q, want %q", args, tag, image(op))
		}
		if args[len(args)-1] != "." {
			t.Errorf("docker build %q: want the repository as the context", args)
		}
	}
}
