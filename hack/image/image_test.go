package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRevision is the images' revision label in the tests.
const testRevision = "0123456789abcdef0123456789abcdef01234567"

// The tarball holds the binary at /operator, alone, and the config the
// Dockerfile's final stage has: what docker load would load, read back as
// crane push reads it.
//
// It runs in parallel with the push test: each compresses the operator
// (half a minute under -race).
func TestTheImageHoldsTheBinaryOnly(t *testing.T) {
	t.Parallel()
	bin := operatorBinary(t)
	// What the command makes of the environment's SOURCE_DATE_EPOCH (none
	// in the tests, unless the caller sets one): TestTheSameInputsMakeTheSameDigest
	// sets it.
	created, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "images", operator+".tar")
	_, stderr, err := runImage(t, "-binary", bin, "-version", testVersion, "-revision", testRevision, "-out", path)
	if err != nil {
		t.Fatalf("image: %v\n%s", err, stderr)
	}
	t.Log(strings.TrimSpace(stderr))

	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("could not read the tarball: %v", err)
	}
	// The tag docker load gives it: IMAGE_REGISTRY/<operator>:VERSION.
	if _, err := tarball.ImageFromPath(path, ptr(mustTag(t, "ghcr.io/kooperkit/"+operator+":"+testVersion))); err != nil {
		t.Errorf("the tarball has no image tagged ghcr.io/kooperkit/%s:%s: %v", operator, testVersion, err)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("got user %q, want 65532:65532", cf.Config.User)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/operator"}) || cf.Config.Cmd != nil {
		t.Errorf("got entrypoint %q and cmd %q, want [/operator] and none", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    operator,
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.revision": testRevision,
		"org.opencontainers.image.source":   "https://github.com/kooperkit/kooper",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if !maps.Equal(cf.Config.Labels, wantLabels) {
		t.Errorf("got labels %v, want %v", cf.Config.Labels, wantLabels)
	}
	// Nothing else in the config: no environment, working directory, ports,
	// volumes or stop signal to differ from the Dockerfile's.
	rest := cf.Config
	rest.User, rest.Entrypoint, rest.Labels = "", nil, nil
	if !reflect.DeepEqual(rest, v1.Config{}) {
		t.Errorf("got config %+v besides user, entrypoint and labels, want nothing", rest)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("got platform %s/%s, want linux/%s (the binary's)", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	checkCreated(t, cf, created)

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("got %d layers, want 1: no base, the binary only", len(layers))
	}
	if mt, err := layers[0].MediaType(); err != nil || mt != types.DockerLayer {
		t.Errorf("got layer media type %s (%v), want %s", mt, err, types.DockerLayer)
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	files := layerFiles(t, layers[0])
	if len(files) != 1 {
		t.Fatalf("got %d entries in the layer, want 1, the binary", len(files))
	}
	f := files[0]
	switch {
	case f.hdr.Name != "operator" || f.hdr.Typeflag != tar.TypeReg:
		t.Errorf("got layer entry %q of type %q, want the regular file operator (/operator)", f.hdr.Name, f.hdr.Typeflag)
	case f.hdr.Mode != 0o755:
		t.Errorf("got mode %o, want 0755", f.hdr.Mode)
	case f.hdr.Uid != 0 || f.hdr.Gid != 0 || f.hdr.Uname != "" || f.hdr.Gname != "":
		t.Errorf("got owner %d:%d (%q:%q), want 0:0 and no names", f.hdr.Uid, f.hdr.Gid, f.hdr.Uname, f.hdr.Gname)
	case !f.hdr.ModTime.Equal(created):
		t.Errorf("got modification time %v, want SOURCE_DATE_EPOCH", f.hdr.ModTime)
	case !bytes.Equal(f.data, want):
		t.Errorf("the layer's /operator (%d bytes) differs from %s (%d bytes)", len(f.data), bin, len(want))
	}

	// The binary taken out of the image runs, and is the one stamped with
	// the version of the label.
	if runtime.GOOS != "linux" {
		return
	}
	extracted := filepath.Join(t.TempDir(), "operator")
	if err := os.WriteFile(extracted, f.data, os.FileMode(f.hdr.Mode)); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(extracted, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("/operator -version: %v\n%s", err, b)
	}
	if got, want := strings.TrimSpace(string(b)), operator+" "+testVersion; got != want {
		t.Errorf("got /operator -version %q, want %q", got, want)
	}
}

// The same inputs make the same image, byte for byte; each input changes
// the digest.
func TestTheSameInputsMakeTheSameDigest(t *testing.T) {
	// A small static program: the operator's 50 MiB take seconds to
	// compress (more under -race), and the digest depends on its bytes as
	// on any other.
	bin := goProgram(t, "GOOS=linux", "CGO_ENABLED=0")
	base := Config{Binary: bin, Name: operator, Version: testVersion, Revision: testRevision, Created: time.Unix(1700000000, 0)}
	digest := func(cfg Config) v1.Hash {
		t.Helper()
		img, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest(base)
	if again := digest(base); again != first {
		t.Errorf("got digests %s then %s from the same inputs, want one", first, again)
	}
	// Written out twice by the command, given base.Created as
	// SOURCE_DATE_EPOCH: the same bytes, and the same digest as Build's.
	t.Setenv("SOURCE_DATE_EPOCH", strconv.FormatInt(base.Created.Unix(), 10))
	dir := t.TempDir()
	var sums [2][sha256.Size]byte
	for i := range sums {
		path := filepath.Join(dir, "image.tar")
		if _, stderr, err := runImage(t, "-binary", bin, "-name", operator, "-version", testVersion, "-revision", testRevision, "-out", path); err != nil {
			t.Fatalf("image: %v\n%s", err, stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = sha256.Sum256(b)
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := img.Digest(); err != nil || d != first {
			t.Errorf("got digest %s (%v) from the tarball, want %s, the built image's", d, err, first)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		checkCreated(t, cf, base.Created)
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range layerFiles(t, layers[0]) {
			if !f.hdr.ModTime.Equal(base.Created) {
				t.Errorf("got %s modified at %v, want SOURCE_DATE_EPOCH", f.hdr.Name, f.hdr.ModTime)
			}
		}
	}
	if sums[0] != sums[1] {
		t.Errorf("the tarball differs between two runs: sha256 %x then %x", sums[0], sums[1])
	}

	for _, tt := range []struct {
		name   string
		change func(*Config)
	}{
		{"another version", func(c *Config) { c.Version = "v0.0.1-imagetest" }},
		{"another revision", func(c *Config) { c.Revision = "" }},
		{"another creation time", func(c *Config) { c.Created = c.Created.Add(time.Second) }},
		{"another name", func(c *Config) { c.Name = "renamed" }},
		{"another source", func(c *Config) { c.Source = "https://example.com/fork" }},
	} {
		t.Run(tt.name+" makes another digest", func(t *testing.T) {
			cfg := base
			tt.change(&cfg)
			if got := digest(cfg); got == first {
				t.Errorf("got digest %s, want one other than the first image's", got)
			}
		})
	}
}

// checkCreated fails unless the image and its history are created at want.
func checkCreated(t *testing.T, cf *v1.ConfigFile, want time.Time) {
	t.Helper()
	if !cf.Created.Equal(want) {
		t.Errorf("got created %v, want SOURCE_DATE_EPOCH %v", cf.Created.Time, want)
	}
	if len(cf.History) != 1 {
		t.Errorf("got %d history entries, want 1, the binary's layer", len(cf.History))
	}
	for _, h := range cf.History {
		if !h.Created.Equal(want) {
			t.Errorf("got history entry created %v, want SOURCE_DATE_EPOCH %v", h.Created.Time, want)
		}
	}
}

// layerFile is an entry of a layer and its content.
type layerFile struct {
	hdr  *tar.Header
	data []byte
}

// layerFiles returns the entries of the uncompressed layer.
func layerFiles(t *testing.T, l v1.Layer) []layerFile {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var files []layerFile
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, layerFile{hdr: hdr, data: data})
	}
}

func ptr[T any](v T) *T { return &v }
