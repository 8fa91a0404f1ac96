package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "grafana", "alerts")
	for _, d := range []string{deep, filepath.Join(root, "bin"), filepath.Join(root, "grafana", "bin", "prometheus")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(root, rel), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/promtool", 0o755)
	write("bin/prometheus", 0o755)
	write("bin/notes", 0o644)

	tests := []struct {
		name, from, cmd string
		want            string // the path found, relative to root
		wantErr         string // or a part of the error
	}{
		{name: "in the working directory's bin/", from: ".", cmd: "promtool", want: "bin/promtool"},
		{name: "in a parent's bin/", from: "grafana/alerts", cmd: "promtool", want: "bin/promtool"},
		{name: "a directory of that name is skipped", from: "grafana/alerts", cmd: "prometheus", want: "bin/prometheus"},
		{name: "a file that is not executable is no command", from: ".", cmd: "notes", wantErr: "build it into the repository's bin/"},
		{name: "missing: the error names the make target", from: "grafana", cmd: "promtool-x", wantErr: "no bin/promtool-x in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := find(filepath.Join(root, tt.from), tt.cmd)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want ErrMissing saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != filepath.Join(root, tt.want) {
				t.Fatalf("got %q, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestAMissingToolNamesItsMakeTarget(t *testing.T) {
	_, err := find(t.TempDir(), "promtool")
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "run `make prometheus` (make test does)") {
		t.Fatalf("got %v, want ErrMissing naming make prometheus", err)
	}
}
