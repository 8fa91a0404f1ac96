package main

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTarball writes a tarball holding manifest.json with manifest as its
// content (none when manifest is empty).
func writeTarball(t *testing.T, path, manifest string) {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	files := map[string]string{"blobs/sha256/0": "layer"}
	if manifest != "" {
		files["manifest.json"] = manifest
	}
	for _, name := range []string{"blobs/sha256/0", "manifest.json"} {
		content, ok := files[name]
		if !ok {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A -pods node knows each image by the tags make image gave it, from
// files and directories; what it could not name, or would name twice, is
// refused with what to do.
func TestTheNodeKnowsEachImageByItsTag(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first")
	second := filepath.Join(dir, "second")
	for _, d := range []string{first, second} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTarball(t, filepath.Join(first, "pod-terminator.tar"), `[{"Config":"c","RepoTags":["kooper.local/pod-terminator:first"],"Layers":["blobs/sha256/0"]}]`)
	writeTarball(t, filepath.Join(second, "pod-terminator.tar"), `[{"RepoTags":["kooper.local/pod-terminator:second","kooper.local/pod-terminator:latest"]}]`)
	writeTarball(t, filepath.Join(dir, "same-tag.tar"), `[{"RepoTags":["kooper.local/pod-terminator:first"]}]`)
	writeTarball(t, filepath.Join(dir, "untagged.tar"), `[{"RepoTags":[]}]`)
	writeTarball(t, filepath.Join(dir, "no-manifest.tar"), "")
	if err := os.WriteFile(filepath.Join(dir, "not-a-tar.tar"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		paths   []string
		want    map[string]string // tag → tarball
		wantErr string
	}{
		{
			name:  "directories of make image's tarballs",
			paths: []string{first, second},
			want: map[string]string{
				"kooper.local/pod-terminator:first":  filepath.Join(first, "pod-terminator.tar"),
				"kooper.local/pod-terminator:second": filepath.Join(second, "pod-terminator.tar"),
				"kooper.local/pod-terminator:latest": filepath.Join(second, "pod-terminator.tar"),
			},
		},
		{
			name:  "a file, named twice",
			paths: []string{filepath.Join(first, "pod-terminator.tar"), filepath.Join(first, "pod-terminator.tar")},
			want:  map[string]string{"kooper.local/pod-terminator:first": filepath.Join(first, "pod-terminator.tar")},
		},
		{name: "one tag in two tarballs", paths: []string{first, filepath.Join(dir, "same-tag.tar")}, wantErr: "are both tagged kooper.local/pod-terminator:first"},
		{name: "an image without a tag", paths: []string{filepath.Join(dir, "untagged.tar")}, wantErr: "its image has no tag"},
		{name: "a tarball that is no image", paths: []string{filepath.Join(dir, "no-manifest.tar")}, wantErr: "no manifest.json"},
		{name: "a file that is no tarball", paths: []string{filepath.Join(dir, "not-a-tar.tar")}, wantErr: "not an image tarball"},
		{name: "nothing built yet", paths: []string{filepath.Join(dir, "bin", "images")}, wantErr: "build an image first (make image"},
		{name: "a directory without images", paths: []string{empty}, wantErr: "no image tarball in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nodeImages(tt.paths)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("got the tags %v, want %d", tags(got), len(tt.want))
			}
			for tag, tarball := range tt.want {
				if got[tag].Tarball != tarball {
					t.Errorf("%s: got %q, want %q", tag, got[tag].Tarball, tarball)
				}
			}
			if !slices.IsSorted(tags(got)) {
				t.Errorf("tags not sorted: %v", tags(got))
			}
		})
	}
}

// -pods runs pods on its own node: kwok's nodes beside it would take an
// operator's replicas and run nothing, so asking for both is refused
// before anything starts.
func TestPodsAndKwokNodesAreNotMixed(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run(context.Background(), []string{"-root", dir, "-pods", "-nodes", "2"}, &out)
	if err == nil || !strings.Contains(err.Error(), "-pods and -nodes") {
		t.Fatalf("got %v, want the -pods and -nodes refusal", err)
	}
	err = run(context.Background(), []string{"-root", dir, "-pods"}, &out)
	if err == nil || !strings.Contains(err.Error(), "build an image first") {
		t.Fatalf("got %v, want the missing bin/images named", err)
	}
}

func TestPrefixWriterWritesWholeLines(t *testing.T) {
	var b bytes.Buffer
	w := &prefixWriter{prefix: "node: ", w: &b}
	for _, s := range []string{"pod a ", "started\npod b", " exited\n", "half"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := b.String(), "node: pod a started\nnode: pod b exited\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
