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

// unpackLayer applies one layer (a tar, gzipped or not) to root, with the
// OCI whiteouts. Entries may not leave root.
func unpackLayer(root string, layer []byte) error {
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
		rel := path.Clean("/" + h.Name)
		if rel == "/" {
			continue
		}
		target := filepath.Join(root, filepath.FromSlash(rel))
		dir, base := filepath.Split(target)
		if base == ".wh..wh..opq" {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
			continue
		}
		if hidden, ok := strings.CutPrefix(base, ".wh."); ok {
			_ = os.RemoveAll(filepath.Join(dir, hidden))
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode); err != nil {
				return err
			}
		case tar.TypeReg:
			_ = os.RemoveAll(target)
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.RemoveAll(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		case tar.TypeLink:
			_ = os.RemoveAll(target)
			if err := os.Link(filepath.Join(root, filepath.FromSlash(path.Clean("/"+h.Linkname))), target); err != nil {
				return err
			}
		default:
			continue // devices and fifos: nothing a static program needs
		}
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeSymlink {
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		}
	}
}
