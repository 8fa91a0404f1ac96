package procnode

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// tarFile is one entry of a test tarball.
type tarFile struct {
	name, body, link string
	mode             int64
	typ              byte
}

func tarball(t *testing.T, files []tarFile, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w = &buf
	var zw *gzip.Writer
	tw := tar.NewWriter(w)
	if gz {
		zw = gzip.NewWriter(w)
		tw = tar.NewWriter(zw)
	}
	for _, f := range files {
		typ := f.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: typ, Linkname: f.link, Uid: 0, Gid: 0}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(f.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// An image of `docker save` is unpacked layer after layer, whiteouts
// applied, with its configuration.
func TestLoadATarball(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unpacking sets owners: needs root")
	}
	base := tarball(t, []tarFile{
		{name: "operator", body: "#!binary", mode: 0o755},
		{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		{name: "etc/old", body: "gone", mode: 0o644},
		{name: "etc/keep", body: "kept", mode: 0o644},
		{name: "etc/link", typ: tar.TypeSymlink, link: "keep"},
	}, true)
	top := tarball(t, []tarFile{
		{name: "etc/.wh.old", mode: 0o644},
		{name: "../escape", body: "stays inside", mode: 0o644},
	}, false)
	cfg, _ := json.Marshal(map[string]any{"config": map[string]any{"Entrypoint": []string{"/operator"}, "User": "65532:65532", "Env": []string{"A=1"}}})
	manifest, _ := json.Marshal([]map[string]any{{"Config": "sha256:cfg", "RepoTags": []string{"x:1"}, "Layers": []string{"l1.tar.gz", "l2.tar"}}})
	image := tarball(t, []tarFile{
		{name: "manifest.json", body: string(manifest), mode: 0o644},
		{name: "sha256:cfg", body: string(cfg), mode: 0o644},
		{name: "l1.tar.gz", body: string(base), mode: 0o644},
		{name: "l2.tar", body: string(top), mode: 0o644},
	}, false)
	dir := t.TempDir()
	path := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(path, image, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := Image{Tarball: path}.load(filepath.Join(dir, "rootfs"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(img.config.Entrypoint, []string{"/operator"}) || img.config.User != "65532:65532" || !slices.Equal(img.config.Env, []string{"A=1"}) {
		t.Errorf("config %+v", img.config)
	}
	root := filepath.Join(dir, "rootfs")
	if fi, err := os.Stat(filepath.Join(root, "operator")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("operator: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc", "old")); !os.IsNotExist(err) {
		t.Errorf("the whiteout left etc/old: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc", "link")); err != nil || string(b) != "kept" {
		t.Errorf("etc/link: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "escape")); err != nil || string(b) != "stays inside" {
		t.Errorf("../escape was not kept inside the root: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "escape")); !os.IsNotExist(err) {
		t.Error("a layer wrote outside the root")
	}
}
