package procnode

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		// Owned by the test's user, so unpacking can set owners without root.
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: typ, Linkname: f.link, Uid: os.Getuid(), Gid: os.Getgid()}
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
}

// saveImage writes in dir an image of `docker save` whose layers are
// l1.tar, l2.tar, ... in order, and returns its path.
func saveImage(t *testing.T, dir string, layers ...[]tarFile) string {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"config": map[string]any{"Entrypoint": []string{"/bin/sh"}}})
	files := []tarFile{{name: "sha256:cfg", body: string(cfg), mode: 0o644}}
	var names []string
	for i, l := range layers {
		name := fmt.Sprintf("l%d.tar", i+1)
		names = append(names, name)
		files = append(files, tarFile{name: name, body: string(tarball(t, l, false)), mode: 0o644})
	}
	manifest, _ := json.Marshal([]map[string]any{{"Config": "sha256:cfg", "Layers": names}})
	files = append(files, tarFile{name: "manifest.json", body: string(manifest), mode: 0o644})
	p := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(p, tarball(t, files, false), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// unpackDirs is a root file system to unpack into, next to an outside
// directory that unpacking must leave alone.
type unpackDirs struct {
	dir, root, outside string
	before             map[string]string
}

// newUnpackDirs makes dir/rootfs (empty, not created) and dir/outside with a
// file, secret, in it.
func newUnpackDirs(t *testing.T) *unpackDirs {
	t.Helper()
	dir := t.TempDir()
	s := &unpackDirs{dir: dir, root: filepath.Join(dir, "rootfs"), outside: filepath.Join(dir, "outside")}
	if err := os.Mkdir(s.outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.before = snapshot(t, s.outside)
	return s
}

// snapshot describes every file under dir: its mode, and its content or
// link target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + link
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = desc
		return nil
	})
	if err != nil {
		files["walk error"] = err.Error()
	}
	return files
}

// checkOutside fails t if unpacking changed the outside directory, or left
// a hard link to one of its files in the root.
func (s *unpackDirs) checkOutside(t *testing.T) {
	t.Helper()
	if after := snapshot(t, s.outside); !maps.Equal(after, s.before) {
		t.Errorf("outside the root: got %v, want %v", after, s.before)
	}
	secret, err := os.Stat(filepath.Join(s.outside, "secret"))
	if err != nil {
		return
	}
	_ = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := os.Lstat(p); err == nil && os.SameFile(fi, secret) {
				t.Errorf("%s is a hard link to %s", p, filepath.Join(s.outside, "secret"))
			}
		}
		return nil
	})
}

// A layer cannot create, write, remove or change anything outside the
// root: an entry that would is refused, with an error naming it and its
// layer.
func TestLoadRefusesEntriesLeavingTheRoot(t *testing.T) {
	for _, tt := range []struct {
		name string
		// layers of the image; outside is the absolute path of the outside
		// directory, root's sibling.
		layers func(outside string) [][]tarFile
		// layer and entry are the refused entry.
		layer, entry string
	}{
		{
			name: "a file beneath a symlink to an absolute path outside is refused",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{{
					{name: "evil", typ: tar.TypeSymlink, link: outside},
					{name: "evil/x", body: "pwned", mode: 0o644},
				}}
			},
			layer: "l1.tar", entry: "evil/x",
		},
		{
			name: "a file beneath a relative symlink climbing out with .. is refused",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{
					{name: "a/b/", typ: tar.TypeDir, mode: 0o755},
					{name: "a/b/evil", typ: tar.TypeSymlink, link: "../../../outside"},
					{name: "a/b/evil/x", body: "pwned", mode: 0o644},
				}}
			},
			layer: "l1.tar", entry: "a/b/evil/x",
		},
		{
			name: "a file beneath a symlink of an earlier layer is refused in its own layer",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{
					{{name: "evil", typ: tar.TypeSymlink, link: outside}},
					{{name: "evil/secret", body: "pwned", mode: 0o644}},
				}
			},
			layer: "l2.tar", entry: "evil/secret",
		},
		{
			name: "a symlink beneath a symlink to outside is refused",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{{
					{name: "evil", typ: tar.TypeSymlink, link: outside},
					{name: "evil/link", typ: tar.TypeSymlink, link: "/etc/passwd"},
				}}
			},
			layer: "l1.tar", entry: "evil/link",
		},
		{
			name: "a directory beneath a symlink to outside is refused",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{{
					{name: "evil", typ: tar.TypeSymlink, link: outside},
					{name: "evil/dir/", typ: tar.TypeDir, mode: 0o777},
				}}
			},
			layer: "l1.tar", entry: "evil/dir/",
		},
		{
			name: "a directory entry over a symlink to outside does not chmod outside",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{{
					{name: "evil", typ: tar.TypeSymlink, link: outside},
					{name: "evil/", typ: tar.TypeDir, mode: 0o777},
				}}
			},
			layer: "l1.tar", entry: "evil/",
		},
		{
			name: "a hard link to a file outside through a symlink is refused",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{{
					{name: "evil", typ: tar.TypeSymlink, link: outside},
					{name: "stolen", typ: tar.TypeLink, link: "evil/secret", mode: 0o777},
				}}
			},
			layer: "l1.tar", entry: "stolen",
		},
		{
			name: "a hard link whose target climbs out with .. is refused",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{{name: "stolen", typ: tar.TypeLink, link: "../outside/secret", mode: 0o777}}}
			},
			layer: "l1.tar", entry: "stolen",
		},
		{
			name: "an entry named ../x is refused",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{{name: "../outside/x", body: "pwned", mode: 0o644}}}
			},
			layer: "l1.tar", entry: "../outside/x",
		},
		{
			name: "an entry climbing out after a directory is refused",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{{name: "etc/../../outside/x", body: "pwned", mode: 0o644}}}
			},
			layer: "l1.tar", entry: "etc/../../outside/x",
		},
		{
			name: "a whiteout beneath a symlink to outside is refused",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{
					{{name: "evil", typ: tar.TypeSymlink, link: outside}},
					{{name: "evil/.wh.secret", mode: 0o644}},
				}
			},
			layer: "l2.tar", entry: "evil/.wh.secret",
		},
		{
			name: "an opaque whiteout beneath a symlink to outside is refused",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{
					{{name: "evil", typ: tar.TypeSymlink, link: outside}},
					{{name: "evil/.wh..wh..opq", mode: 0o644}},
				}
			},
			layer: "l2.tar", entry: "evil/.wh..wh..opq",
		},
		{
			name: "a whiteout of the root's parent is refused",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{{name: ".wh...", mode: 0o644}}}
			},
			layer: "l1.tar", entry: ".wh...",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newUnpackDirs(t)
			image := saveImage(t, s.dir, tt.layers(s.outside)...)
			_, err := Image{Tarball: image}.load(s.root)
			want := fmt.Sprintf("layer %s: entry %q", tt.layer, tt.entry)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got error %v, want one naming %s", err, want)
			}
			s.checkOutside(t)
			if _, err := os.Stat(image); err != nil {
				t.Errorf("the image next to the root: %v", err)
			}
		})
	}
}

// Links that stay in the root unpack as before: symlinks keep absolute
// targets (the container runs chrooted to the root, where they resolve),
// paths through symlinks to directories of the root are followed, hard
// links and whiteouts apply inside the root, and an entry replacing a
// symlink replaces the link, not its target.
func TestLoadKeepsLinksInsideTheRoot(t *testing.T) {
	for _, tt := range []struct {
		name   string
		layers func(outside string) [][]tarFile
		// files maps paths in the root to their content, "-> target" for a
		// symlink, or "" for a path that must not exist.
		files map[string]string
	}{
		{
			name: "an absolute symlink is kept as is",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{
					{name: "bin/", typ: tar.TypeDir, mode: 0o755},
					{name: "bin/busybox", body: "#!busybox", mode: 0o755},
					{name: "bin/sh", typ: tar.TypeSymlink, link: "/bin/busybox"},
					{name: "etc/passwd", body: "root:x:0:0::/:/bin/sh\n", mode: 0o644},
				}}
			},
			files: map[string]string{"bin/busybox": "#!busybox", "bin/sh": "-> /bin/busybox", "etc/passwd": "root:x:0:0::/:/bin/sh\n"},
		},
		{
			name: "a path through a relative symlink to a directory of the root is followed",
			layers: func(string) [][]tarFile {
				return [][]tarFile{
					{
						{name: "usr/lib/", typ: tar.TypeDir, mode: 0o755},
						{name: "lib", typ: tar.TypeSymlink, link: "usr/lib"},
					},
					{
						{name: "lib/libc.so", body: "elf", mode: 0o755},
						{name: "lib/", typ: tar.TypeDir, mode: 0o755},
					},
				}
			},
			files: map[string]string{"lib": "-> usr/lib", "usr/lib/libc.so": "elf"},
		},
		{
			name: "a hard link inside the root links the file",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{
					{name: "/bin/busybox", body: "#!busybox", mode: 0o755},
					{name: "/bin/ash", typ: tar.TypeLink, link: "/bin/busybox", mode: 0o755},
					{name: "bin/sh", typ: tar.TypeSymlink, link: "/bin/busybox"},
					{name: "bin/hush", typ: tar.TypeLink, link: "bin/sh"},
				}}
			},
			files: map[string]string{"bin/busybox": "#!busybox", "bin/ash": "#!busybox", "bin/hush": "-> /bin/busybox"},
		},
		{
			name: "a hard link to a symlink to outside is a link, and its target keeps its mode",
			layers: func(string) [][]tarFile {
				return [][]tarFile{{
					{name: "evil", typ: tar.TypeSymlink, link: "../outside/secret"},
					{name: "stolen", typ: tar.TypeLink, link: "evil", mode: 0o777},
				}}
			},
			files: map[string]string{"stolen": "-> ../outside/secret"},
		},
		{
			name: "a file replacing a symlink to outside replaces the link",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{
					{{name: "secret", typ: tar.TypeSymlink, link: filepath.Join(outside, "secret")}},
					{{name: "secret", body: "mine", mode: 0o600}},
				}
			},
			files: map[string]string{"secret": "mine"},
		},
		{
			name: "a symlink replacing a symlink to outside replaces the link",
			layers: func(outside string) [][]tarFile {
				return [][]tarFile{
					{{name: "evil", typ: tar.TypeSymlink, link: outside}},
					{{name: "evil", typ: tar.TypeSymlink, link: "/tmp"}},
				}
			},
			files: map[string]string{"evil": "-> /tmp"},
		},
		{
			name: "whiteouts remove files of the root, through symlinks inside it",
			layers: func(string) [][]tarFile {
				return [][]tarFile{
					{
						{name: "etc/old", body: "old", mode: 0o644},
						{name: "var/lib/a", body: "a", mode: 0o644},
						{name: "var/lib/b", body: "b", mode: 0o644},
						{name: "data", typ: tar.TypeSymlink, link: "var/lib"},
					},
					{
						{name: "etc/.wh.old", mode: 0o644},
						{name: "etc/.wh.never-there", mode: 0o644},
						{name: "data/.wh..wh..opq", mode: 0o644},
						{name: "gone/.wh.x", mode: 0o644},
					},
				}
			},
			files: map[string]string{"etc/old": "", "var/lib/a": "", "var/lib/b": "", "data": "-> var/lib"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newUnpackDirs(t)
			if _, err := (Image{Tarball: saveImage(t, s.dir, tt.layers(s.outside)...)}).load(s.root); err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.files {
				p := filepath.Join(s.root, filepath.FromSlash(name))
				fi, err := os.Lstat(p)
				var got string
				switch {
				case err != nil:
					if !os.IsNotExist(err) {
						t.Fatal(err)
					}
				case fi.Mode()&fs.ModeSymlink != 0:
					link, _ := os.Readlink(p)
					got = "-> " + link
				default:
					b, _ := os.ReadFile(p)
					got = string(b)
				}
				if got != want {
					t.Errorf("%s: got %q, want %q", name, got, want)
				}
			}
			s.checkOutside(t)
		})
	}
	t.Run("a hard link shares its target's inode", func(t *testing.T) {
		s := newUnpackDirs(t)
		layer := []tarFile{
			{name: "bin/busybox", body: "#!busybox", mode: 0o755},
			{name: "bin/ash", typ: tar.TypeLink, link: "bin/busybox", mode: 0o755},
		}
		if _, err := (Image{Tarball: saveImage(t, s.dir, layer)}).load(s.root); err != nil {
			t.Fatal(err)
		}
		a, errA := os.Stat(filepath.Join(s.root, "bin", "busybox"))
		b, errB := os.Stat(filepath.Join(s.root, "bin", "ash"))
		if errA != nil || errB != nil || !os.SameFile(a, b) {
			t.Errorf("bin/ash: got %v %v, want a hard link to bin/busybox", errA, errB)
		}
	})
}
