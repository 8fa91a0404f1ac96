package build_test

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// root is the repository, relative to this package.
const root = "../.."

// script is the shared build command, relative to root.
const script = "hack/build/build.sh"

// The operators, built exactly as make build and the Dockerfile build them,
// are static, trimmed, built without cgo and stamped with VERSION: what
// `file` and `go version -m` would show.
func TestTheBuildScriptMakesStaticTrimmedStampedBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the operators")
	}
	const version = "v0.0.0-buildtest"
	names := operators(t)
	out := t.TempDir()
	args := []string{out + "/"}
	for _, name := range names {
		args = append(args, "./operators/"+name+"/cmd/"+name)
	}
	cmd := exec.Command("./"+script, args...)
	cmd.Dir = root
	// make test-unit runs this test with CGO_ENABLED=1 (for -race): the
	// script must turn cgo off whatever the caller's environment says.
	// GOOS=linux: the images' platform, and ELF whatever the host.
	cmd.Env = append(os.Environ(), "VERSION="+version, "CGO_ENABLED=1", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, b)
	}

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(out, name)
			checkStatic(t, bin)

			info, err := buildinfo.ReadFile(bin)
			if err != nil {
				t.Fatalf("go version -m %s: %v", name, err)
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			for key, want := range map[string]string{"-trimpath": "true", "CGO_ENABLED": "0", "GOOS": "linux"} {
				if got := settings[key]; got != want {
					t.Errorf("got build setting %s=%q, want %q", key, got, want)
				}
			}
			if info.Path != "github.com/kooperkit/kooper/operators/"+name+"/cmd/"+name {
				t.Errorf("got main package %s, want the %s command", info.Path, name)
			}

			// The version stamp (-ldflags -X main.version=...). Go leaves
			// -ldflags out of the build information of a -trimpath build
			// (they may hold paths, go.dev/issue/52372), so it is looked for
			// in the binary, and is what -version prints where it runs.
			data, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(version)) {
				t.Errorf("%s does not hold the version %s: want it stamped with -X main.version", name, version)
			}
			if runtime.GOOS != "linux" || (settings["GOARCH"] != runtime.GOARCH) {
				return
			}
			b, err := exec.Command(bin, "-version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s -version: %v\n%s", name, err, b)
			}
			if got, want := strings.TrimSpace(string(b)), name+" "+version; got != want {
				t.Errorf("got %s -version %q, want %q", name, got, want)
			}
		})
	}
}

// operators returns the repository's operators, the directories
// operators/<name> with a command cmd/<name>, sorted; it fails the test if
// there is none, as make build would build no operator.
func operators(t *testing.T) []string {
	t.Helper()
	cmds, err := filepath.Glob(filepath.Join(root, "operators", "*", "cmd", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cmds {
		if name := filepath.Base(c); name == filepath.Base(filepath.Dir(filepath.Dir(c))) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatal("no operator in operators/ (operators/<name>/cmd/<name>): make new-operator writes one")
	}
	return names // Glob sorts them
}

// checkStatic fails unless the ELF binary at path asks for no dynamic loader
// (no PT_INTERP program header) and no shared library (no DT_NEEDED entry):
// what `file` reports as "statically linked".
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a PT_INTERP program header: it needs a dynamic loader, want a static binary", path)
		}
	}
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		t.Fatalf("could not read the dynamic section of %s: %v", path, err)
	}
	if len(needed) > 0 {
		t.Errorf("%s needs shared libraries %q, want none", path, needed)
	}
}

// The Dockerfile builds through the script, and only through it: the build
// line cannot drift from make build's. Its final stage is what the binary's
// static linking allows: scratch, no shell, a non-root user (hack/image's
// tests compare the rest of it with the image make image builds).
func TestTheDockerfileBuildsWithTheScriptOnly(t *testing.T) {
	instructions := dockerfile(t)
	var runs, stages []string
	var user, entrypoint string
	for _, in := range instructions {
		keyword, args, _ := strings.Cut(in, " ")
		switch strings.ToUpper(keyword) {
		case "RUN":
			if strings.Contains(args, script) {
				runs = append(runs, args)
			}
		case "FROM":
			stages = append(stages, args)
			user, entrypoint = "", "" // what counts is the final stage's
		case "USER":
			user = args
		case "ENTRYPOINT":
			entrypoint = args
		}
		for _, flag := range []string{"go build", "go install", "-trimpath", "-ldflags", "CGO_ENABLED"} {
			if strings.Contains(in, flag) {
				t.Errorf("the Dockerfile says %q in %q: the build flags belong to %s only", flag, in, script)
			}
		}
	}
	if len(runs) != 1 {
		t.Fatalf("got %d RUN instructions calling %s, want 1: %q", len(runs), script, runs)
	}
	if len(stages) < 2 {
		t.Fatalf("got stages %q, want a build stage and a final one", stages)
	}
	if final := stages[len(stages)-1]; final != "scratch" {
		t.Errorf("got final stage FROM %s, want scratch: the binary is static and needs no other file", final)
	}
	if !regexp.MustCompile(`^[1-9]\d*(:[1-9]\d*)?$`).MatchString(user) {
		t.Errorf("got USER %q in the final stage, want a numeric non-root user (runAsNonRoot can check only a number)", user)
	}
	if !strings.HasPrefix(entrypoint, "[") {
		t.Errorf("got ENTRYPOINT %s, want the exec form: the image has no shell", entrypoint)
	}
}

// The golang image the Dockerfile builds with is the Go release go.mod asks
// for.
func TestTheDockerfileGoVersionIsGoMods(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	want := "ARG GO_VERSION=" + string(m[1])
	for _, in := range dockerfile(t) {
		if strings.HasPrefix(in, "ARG GO_VERSION=") {
			if in != want {
				t.Errorf("got %q, want %q (go.mod's go directive)", in, want)
			}
			return
		}
	}
	t.Errorf("the Dockerfile has no %q", want)
}

// make build runs the script too, and the Makefile holds no build flags of
// its own.
func TestTheMakefileBuildsWithTheScriptOnly(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"go build", "-trimpath", "-ldflags"} {
		if strings.Contains(string(makefile), flag) {
			t.Errorf("the Makefile says %q: the build flags belong to %s only", flag, script)
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make to ask what make build runs")
	}
	cmd := exec.Command("make", "--no-print-directory", "-n", "build", "VERSION=v0.0.0-buildtest")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, b)
	}
	if got := string(b); !strings.Contains(got, `VERSION="v0.0.0-buildtest" `+script+" bin/ ") {
		t.Errorf("make -n build runs %q, want %s with VERSION", got, script)
	}
}

// dockerfile returns the Dockerfile's instructions, one per line: comments
// dropped, continuation lines joined, whitespace collapsed.
func dockerfile(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		instructions []string
		current      string
	)
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line, continued := strings.CutSuffix(line, "\\")
		current += " " + line
		if !continued {
			instructions = append(instructions, strings.Join(strings.Fields(current), " "))
			current = ""
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return instructions
}
