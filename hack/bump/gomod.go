package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// modFile is the part of `go mod edit -json` this command reads.
type modFile struct {
	Module  struct{ Path string }
	Go      string
	Require []struct {
		Path     string
		Version  string
		Indirect bool
	}
	Replace []struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}
}

// require returns the version file requires of module path, or "".
func (f *modFile) require(path string) string {
	for _, r := range f.Require {
		if r.Path == path {
			return r.Version
		}
	}
	return ""
}

// replacement returns the version path is replaced with, or "".
func (f *modFile) replacement(path string) string {
	for _, r := range f.Replace {
		if r.Old.Path == path {
			return r.New.Version
		}
	}
	return ""
}

// readModFile parses the go.mod file at path with `go mod edit -json`, the
// go command's own parser.
func readModFile(ctx context.Context, path string) (*modFile, error) {
	out, err := goCmd(ctx, "", "mod", "edit", "-json", path)
	if err != nil {
		return nil, err
	}
	var f modFile
	if err := json.Unmarshal(out, &f); err != nil {
		return nil, fmt.Errorf("could not parse %s: %w", path, err)
	}
	return &f, nil
}

// download is one module of `go mod download -json`.
type download struct {
	Path, Version string
	GoMod         string
	Error         string
}

// downloadAll asks the Go module proxy for every module@version in mods and
// returns one result each, in order. A module the proxy refuses comes back
// with Error set; err is only for failures of the go command itself.
func downloadAll(ctx context.Context, mods ...string) ([]download, error) {
	// Outside any module, so that no go.mod of the repository is consulted.
	out, err := goCmd(ctx, "/", append([]string{"mod", "download", "-json"}, mods...)...)
	var res []download
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var d download
		if derr := dec.Decode(&d); derr != nil {
			return nil, fmt.Errorf("could not parse go mod download output: %w", derr)
		}
		res = append(res, d)
	}
	if len(res) != len(mods) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("go mod download answered for %d of %d modules", len(res), len(mods))
	}
	return res, nil
}

// versions lists the versions the proxy serves of module path, oldest first.
func versions(ctx context.Context, path string) ([]string, error) {
	out, err := goCmd(ctx, "/", "list", "-m", "-versions", path)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(out))
	if len(f) == 0 || f[0] != path {
		return nil, fmt.Errorf("unexpected go list output for %s: %q", path, out)
	}
	return f[1:], nil
}

// goCmd runs the go command in dir ("" for the current directory) and returns
// its standard output; its standard error becomes part of the error.
func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if dir == "/" {
		// GOFLAGS=-mod=mod would be refused outside a module; GOWORK too.
		cmd.Env = append(cmd.Environ(), "GOFLAGS=", "GOWORK=off")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
