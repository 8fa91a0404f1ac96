package procnode

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Image is an image a node has without pulling it, as `kind load` gives a
// kind node one: a tarball, or a directory for a test's own program.
type Image struct {
	// Tarball is an image in the format of `docker save`, as `make image`
	// writes bin/images/<operator>.tar. Its first image is used: its layers
	// make the container's root file system, and its configuration gives
	// the entrypoint, command, user, environment and working directory.
	Tarball string
	// Dir, when Tarball is empty, is copied as the root file system, with
	// Entrypoint, Cmd and User as the image configuration.
	Dir string
	// Entrypoint, Cmd and User are the image configuration of Dir (User as
	// "uid[:gid]", numeric).
	Entrypoint, Cmd []string
	User            string
}

// imageConfig is what a container takes from its image's configuration.
type imageConfig struct {
	Entrypoint []string `json:"Entrypoint"`
	Cmd        []string `json:"Cmd"`
	User       string   `json:"User"`
	Env        []string `json:"Env"`
	WorkingDir string   `json:"WorkingDir"`
}

// errNoImage is an image tarball without an image in it.
var errNoImage = errors.New("no image")

// loadedImage is an image unpacked once per node; containers copy its
// root file system.
type loadedImage struct {
	rootfs string
	config imageConfig
	// id is the digest of the configuration (the image ID), or of Dir's
	// path.
	id string
}

// load unpacks img into dir.
func (img Image) load(dir string) (*loadedImage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("could not create %s: %w", dir, err)
	}
	if img.Tarball == "" {
		if img.Dir == "" {
			return nil, errors.New("an Image needs Tarball or Dir")
		}
		if err := os.CopyFS(dir, os.DirFS(img.Dir)); err != nil {
			return nil, fmt.Errorf("could not copy %s: %w", img.Dir, err)
		}
		sum := sha256.Sum256([]byte(img.Dir))
		return &loadedImage{rootfs: dir, config: imageConfig{Entrypoint: img.Entrypoint, Cmd: img.Cmd, User: img.User},
			id: "sha256:" + hex.EncodeToString(sum[:])}, nil
	}
	files, err := readTarball(img.Tarball)
	if err != nil {
		return nil, err
	}
	var manifest []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) == 0 {
		return nil, fmt.Errorf("%s: no manifest.json of `docker save`: %w", img.Tarball, errors.Join(err, errNoImage))
	}
	cfgBytes, ok := files[manifest[0].Config]
	if !ok {
		return nil, fmt.Errorf("%s: configuration %s missing", img.Tarball, manifest[0].Config)
	}
	var cfg struct {
		Config imageConfig `json:"config"`
	}
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		return nil, fmt.Errorf("%s: invalid configuration: %w", img.Tarball, err)
	}
	for _, layer := range manifest[0].Layers {
		b, ok := files[layer]
		if !ok {
			return nil, fmt.Errorf("%s: layer %s missing", img.Tarball, layer)
		}
		if err := unpackLayer(dir, b); err != nil {
			return nil, fmt.Errorf("%s: layer %s: %w", img.Tarball, layer, err)
		}
	}
	sum := sha256.Sum256(cfgBytes)
	return &loadedImage{rootfs: dir, config: cfg.Config, id: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// readTarball returns the files of a tarball by name.
func readTarball(name string) (map[string][]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("could not open the image: %w", err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files[path.Clean(h.Name)] = b
	}
}

// unpackLayer applies one layer (a tar, gzipped or not) to the directory
// dir, with the OCI whiteouts. Every entry is created, written, changed and
// removed through an os.Root, so none reaches outside dir: an entry is
// refused, with an error naming it, when its name or hard link target
// climbs out with "..", or when its path goes through a symbolic link that
// leaves dir (as os.Root, unpacking follows no absolute link). Symbolic
// links themselves keep their targets, absolute or not: the container runs
// chrooted to dir, where they resolve.
func unpackLayer(dir string, layer []byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("could not open the root file system: %w", err)
	}
	defer root.Close()
	var r io.Reader = bytes.NewReader(layer)
	if len(layer) > 2 && layer[0] == 0x1f && layer[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := unpackEntry(root, h, tr); err != nil {
			return fmt.Errorf("entry %q: %w", h.Name, err)
		}
	}
}

// unpackEntry applies the entry h, whose content r holds, to root.
func unpackEntry(root *os.Root, h *tar.Header, r io.Reader) error {
	name, err := rootPath(h.Name)
	if err != nil {
		return err
	}
	if name == "." {
		return nil
	}
	dir, base := path.Split(name)
	dir = path.Clean(dir)
	if base == ".wh..wh..opq" {
		return removeChildren(root, dir)
	}
	if hidden, ok := strings.CutPrefix(base, ".wh."); ok {
		if hidden == "" || hidden == "." || hidden == ".." {
			return errors.New("a whiteout names no file")
		}
		err := root.RemoveAll(filepath.FromSlash(path.Join(dir, hidden)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("could not apply the whiteout: %w", err)
		}
		return nil
	}
	if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
		return fmt.Errorf("could not create its directory: %w", err)
	}
	name = filepath.FromSlash(name)
	mode := fs.FileMode(h.Mode) & fs.ModePerm
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, mode); err != nil {
			return fmt.Errorf("could not create the directory: %w", err)
		}
	case tar.TypeReg:
		// Remove what is there first: a symbolic link is replaced, not
		// written through.
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("could not replace it: %w", err)
		}
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return fmt.Errorf("could not create the file: %w", err)
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("could not write the file: %w", err)
		}
	case tar.TypeSymlink:
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("could not replace it: %w", err)
		}
		if err := root.Symlink(h.Linkname, name); err != nil {
			return fmt.Errorf("could not create the symbolic link: %w", err)
		}
	case tar.TypeLink:
		target, err := rootPath(h.Linkname)
		if err != nil {
			return fmt.Errorf("hard link: %w", err)
		}
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("could not replace it: %w", err)
		}
		if err := root.Link(filepath.FromSlash(target), name); err != nil {
			return fmt.Errorf("could not create the hard link: %w", err)
		}
	default:
		return nil // devices and fifos: nothing a static program needs
	}
	if err := root.Lchown(name, h.Uid, h.Gid); err != nil {
		return fmt.Errorf("could not set its owner: %w", err)
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A symbolic link, or a hard link to one, has no mode of its own:
		// changing it would change its target's.
		return nil
	}
	if err := root.Chmod(name, mode); err != nil {
		return fmt.Errorf("could not set its mode: %w", err)
	}
	return nil
}

// rootPath returns name, a path in a layer, relative to the root file
// system ("." for the root): a leading "/" is the root's. It fails if name
// climbs out of the root with "..".
func rootPath(name string) (string, error) {
	p := path.Clean(strings.TrimLeft(name, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%q leaves the root file system", name)
	}
	return p, nil
}

// removeChildren applies an opaque whiteout: it empties dir, if it exists.
func removeChildren(root *os.Root, dir string) error {
	d, err := root.Open(filepath.FromSlash(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("could not apply the opaque whiteout: %w", err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("could not apply the opaque whiteout: %w", err)
	}
	for _, e := range entries {
		if err := root.RemoveAll(filepath.FromSlash(path.Join(dir, e.Name()))); err != nil {
			return fmt.Errorf("could not apply the opaque whiteout: %w", err)
		}
	}
	return nil
}
