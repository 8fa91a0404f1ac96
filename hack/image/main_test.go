package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// root is the repository, relative to this package.
const root = "../.."

// testVersion is what the test's operator binary is stamped with, and the
// images' version label.
const testVersion = "v0.0.0-imagetest"

// operator is the operator the tests package, the repository's first by
// name: built once per test process by hack/build/build.sh, as make build
// builds it.
var operator = firstOperator()

// firstOperator returns the first, by name, of the directories
// operators/<name> with a command cmd/<name>, or "" if there is none.
func firstOperator() string {
	cmds, _ := filepath.Glob(filepath.Join(root, "operators", "*", "cmd", "*")) // sorted
	for _, c := range cmds {
		if name := filepath.Base(c); name == filepath.Base(filepath.Dir(filepath.Dir(c))) {
			return name
		}
	}
	return ""
}

var (
	buildDir  string // removed by TestMain
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kooper-image-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// operatorBinary returns the path of the operator built for linux (the
// host's architecture) with hack/build/build.sh and VERSION testVersion.
func operatorBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an operator")
	}
	if operator == "" {
		t.Fatal("no operator in operators/ (operators/<name>/cmd/<name>) to build an image of")
	}
	bin := filepath.Join(buildDir, operator)
	buildOnce.Do(func() {
		cmd := exec.Command("hack/build/build.sh", bin, "./operators/"+operator+"/cmd/"+operator)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "VERSION="+testVersion, "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("hack/build/build.sh: %w\n%s", err, b)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// goProgram builds a hello-world Go program with env (GOOS=..., CGO_ENABLED=...)
// and returns its path.
func goProgram(t *testing.T, env ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", env, err, b)
	}
	return filepath.Join(dir, "hello")
}

// runImage runs the command with args and returns its stdout and stderr.
func runImage(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestTheCommandRefusesWhatItCannotPackage(t *testing.T) {
	notGo := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notGo, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	tests := []struct {
		name string
		// binary, when set, is built for -binary; args follow -binary.
		binary func(t *testing.T) string
		args   []string
		env    string // SOURCE_DATE_EPOCH
		want   string
	}{
		{name: "no binary is a usage error", args: []string{"-out", out}, want: "want -binary"},
		{name: "no output is a usage error", binary: func(*testing.T) string { return notGo }, want: "-out or -push"},
		{name: "an argument is a usage error", binary: func(*testing.T) string { return notGo }, args: []string{"-out", out, "extra"}, want: "unexpected arguments"},
		{name: "a file that is no Go binary is refused", binary: func(*testing.T) string { return notGo }, args: []string{"-out", out}, want: "could not read the Go build information"},
		{name: "a missing binary is refused", binary: func(*testing.T) string { return filepath.Join(t.TempDir(), "missing") }, args: []string{"-out", out}, want: "could not read the Go build information"},
		{
			name:   "a binary for another OS is refused",
			binary: func(t *testing.T) string { return goProgram(t, "GOOS=darwin", "CGO_ENABLED=0") },
			args:   []string{"-out", out}, want: "is built for GOOS=darwin",
		},
		{
			name:   "a binary built with cgo is refused",
			binary: func(t *testing.T) string { return goProgram(t, "GOOS=linux", "CGO_ENABLED=1") },
			args:   []string{"-out", out}, want: "is built with cgo",
		},
		{name: "an invalid tag is refused", binary: func(*testing.T) string { return notGo }, args: []string{"-out", out, "-tag", "Not A Tag"}, want: "invalid -tag"},
		{name: "an invalid push reference is refused", binary: func(*testing.T) string { return notGo }, args: []string{"-push", "registry.example/UPPER"}, want: "invalid -push reference"},
		{name: "an invalid SOURCE_DATE_EPOCH is refused", binary: func(*testing.T) string { return notGo }, args: []string{"-out", out}, env: "2024-01-01", want: "invalid SOURCE_DATE_EPOCH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SOURCE_DATE_EPOCH", tt.env)
			args := tt.args
			if tt.binary != nil {
				args = append([]string{"-binary", tt.binary(t)}, args...)
			}
			stdout, _, err := runImage(t, args...)
			if err == nil {
				t.Fatalf("got no error, want one saying %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %q, want one saying %q", err, tt.want)
			}
			if stdout != "" {
				t.Errorf("got stdout %q, want nothing", stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written, want no tarball", out)
			}
		})
	}
}

func TestSourceDateEpochIsTheCreationTime(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"", 0}, // unset: the Unix epoch
		{"0", 0},
		{"1700000000", 1700000000},
		{"42\n", 42}, // as $(shell ...) or a file might give it
	} {
		got, err := sourceDateEpoch(tt.in)
		if err != nil {
			t.Errorf("SOURCE_DATE_EPOCH=%q: %v", tt.in, err)
			continue
		}
		if got.Unix() != tt.want || got.Location() != time.UTC {
			t.Errorf("SOURCE_DATE_EPOCH=%q: got %v, want %d in UTC", tt.in, got, tt.want)
		}
	}
	for _, in := range []string{"-1", "1.5", "yesterday"} {
		if _, err := sourceDateEpoch(in); err == nil {
			t.Errorf("SOURCE_DATE_EPOCH=%q: got no error, want one", in)
		}
	}
}
