package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteAll(t *testing.T) {
	dirs := []string{"apis/x", "operators/x", "manifests/x"}
	files := map[string][]byte{
		"apis/x/v1alpha1/types.go":       []byte("package v1alpha1\n"),
		"operators/x/README.md":          []byte("# x\n"),
		"operators/x/cmd/x/main.go":      []byte("package main\n"),
		"manifests/x/kustomization.yaml": []byte("resources: []\n"),
	}
	tests := []struct {
		name string
		// exists is made before writeAll; appears while it moves the
		// directories into place.
		exists, appears string
		files           map[string][]byte
		wantErr         string
	}{
		{name: "every file is written"},
		{name: "a directory that exists stops everything", exists: "operators/x", wantErr: "could not create operators/x: it exists"},
		{name: "a file outside the directories stops everything", files: map[string][]byte{"go.mod": nil}, wantErr: "go.mod is outside"},
		{name: "a directory appearing meanwhile undoes the moves", appears: "manifests/x", wantErr: "could not create manifests/x: it appeared meanwhile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"apis", "operators", "manifests"} {
				if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.exists != "" {
				if err := os.Mkdir(filepath.Join(root, tt.exists), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			beforeMove = func(d string) {
				if d == tt.appears {
					if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Cleanup(func() { beforeMove = nil })
			in := files
			if tt.files != nil {
				in = tt.files
			}

			err := writeAll(root, dirs, in)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got error %v, want one saying %q", err, tt.wantErr)
			}
			var got []string
			_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(root, p)
					got = append(got, filepath.ToSlash(rel))
				}
				return err
			})
			var want []string
			if tt.wantErr == "" {
				for name := range files {
					want = append(want, name)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got files %q, want %q", got, want)
			}
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".newoperator-") {
					t.Errorf("got %s left behind", e.Name())
				}
			}
			if tt.wantErr != "" {
				for _, d := range dirs {
					if _, err := os.Stat(filepath.Join(root, d)); err == nil && d != tt.exists && d != tt.appears {
						t.Errorf("got %s created, want nothing", d)
					}
				}
			}
		})
	}
}
