package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeTarball writes img, named tag, to path in the format of `docker
// save`, and returns its size. The file appears whole or not at all: it is
// written next to path, then renamed.
func writeTarball(path string, tag name.Tag, img v1.Image) (int64, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("could not create the directory of %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, fmt.Errorf("could not write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // gone after the rename anyway
	if err := tarball.Write(tag, img, f); err != nil {
		f.Close()
		return 0, fmt.Errorf("could not write %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("could not write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("could not write %s: %w", path, err)
	}
	// CreateTemp made it 0600; an artifact is readable by all.
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return 0, fmt.Errorf("could not write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return 0, fmt.Errorf("could not write %s: %w", path, err)
	}
	return info.Size(), nil
}

// push writes img to ref's registry, with the credentials of the Docker
// config (docker login, crane auth login), and returns the reference pinned
// to its digest: what a Deployment should name, as a tag can move.
func push(ctx context.Context, ref name.Reference, img v1.Image) (string, error) {
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("could not push %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("could not compute the digest of %s: %w", ref, err)
	}
	return ref.Context().Digest(digest.String()).String(), nil
}
