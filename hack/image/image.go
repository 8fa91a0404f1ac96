package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image's layout, which the Dockerfile's final stage repeats
// (dockerfile_test.go checks it).
const (
	// Path is where the binary is, and the entrypoint.
	Path = "/operator"
	// User runs the process: distroless' nonroot, numerically, so that the
	// kubelet can verify runAsNonRoot (it cannot resolve a name in an image
	// without /etc/passwd). The binary is owned by 0:0, so the process
	// cannot change it.
	User = "65532:65532"
	// License is the repository's, the licenses label.
	License = "Apache-2.0"
	// DefaultSource is the source label unless Config.Source says otherwise.
	DefaultSource = "https://github.com/kooperkit/kooper"
)

// The OCI labels of the image (github.com/opencontainers/image-spec,
// annotations.md), which registries and scanners show.
const (
	labelTitle    = "org.opencontainers.image.title"
	labelVersion  = "org.opencontainers.image.version"
	labelRevision = "org.opencontainers.image.revision"
	labelSource   = "org.opencontainers.image.source"
	labelLicenses = "org.opencontainers.image.licenses"
)

// gzipLevel compresses the layer. It is fixed, as the digest depends on it
// (gzip.DefaultCompression is this level today, and could change). On the
// pod-terminator (51 MiB): 15.1 MiB in 1.5 s; level 9 saves 60 KiB for 2.7 s
// more, level 1 costs 2.3 MiB.
const gzipLevel = 6

// Config is what an image is made of: the same Config and binary make the
// same digest.
type Config struct {
	Binary   string    // Binary is the path of a static linux Go binary (hack/build/build.sh). Required.
	Name     string    // Name is the operator's, the title label. Required.
	Version  string    // Version the binary is stamped with, the version label.
	Revision string    // Revision is the commit, the revision label; may be empty.
	Source   string    // Source is the repository's URL, the source label. Default DefaultSource.
	Created  time.Time // Created is the image's and the binary's time. Default the Unix epoch.
}

// Build returns the image of cfg.Binary: one layer with the binary at Path on
// no base, for the platform the binary is built for.
//
// The manifest, config and layer have Docker's media types (schema 2), as
// a `docker save` tarball records none: whoever reads the tarball
// (go-containerregistry's tarball package, so crane push) sees these, so the
// image has one digest whether pushed with -push or from the tarball.
func Build(cfg Config) (v1.Image, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("no name for the image of %s", cfg.Binary)
	}
	if cfg.Source == "" {
		cfg.Source = DefaultSource
	}
	if cfg.Created.IsZero() {
		cfg.Created = time.Unix(0, 0)
	}
	created := v1.Time{Time: cfg.Created.UTC()}

	platform, err := binaryPlatform(cfg.Binary)
	if err != nil {
		return nil, err
	}
	binary, err := os.ReadFile(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("could not read the binary: %w", err)
	}
	layer, err := binaryLayer(binary, created.Time)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		// What docker history shows; no path of the build machine.
		History: v1.History{Created: created, CreatedBy: "hack/image: " + Path, Comment: cfg.Name + " " + cfg.Version},
	})
	if err != nil {
		return nil, fmt.Errorf("could not add the binary's layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("could not read the image's config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Path},
		Labels: map[string]string{
			labelTitle:    cfg.Name,
			labelVersion:  cfg.Version,
			labelRevision: cfg.Revision,
			labelSource:   cfg.Source,
			labelLicenses: License,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("could not set the image's config: %w", err)
	}
	return img, nil
}

// binaryPlatform returns the platform the Go binary at path runs on, from
// its build information, and fails unless it is a static linux binary: the
// image has no libc and no dynamic loader.
func binaryPlatform(path string) (v1.Platform, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return v1.Platform{}, fmt.Errorf("could not read the Go build information of %s (want a binary of hack/build/build.sh): %w", path, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if goos := settings["GOOS"]; goos != "linux" {
		return v1.Platform{}, fmt.Errorf("%s is built for GOOS=%s: an image runs a linux binary (GOOS=linux hack/build/build.sh)", path, goos)
	}
	if settings["CGO_ENABLED"] != "0" {
		return v1.Platform{}, fmt.Errorf("%s is built with cgo: the image has no libc, want a static binary (hack/build/build.sh)", path)
	}
	p := v1.Platform{OS: "linux", Architecture: settings["GOARCH"]}
	if p.Architecture == "arm" {
		// GOARM is 5, 6 or 7, maybe followed by ",softfloat".
		if v, _, _ := strings.Cut(settings["GOARM"], ","); v != "" {
			p.Variant = "v" + v
		}
	}
	return p, nil
}

// binaryLayer returns a gzipped tar holding only the binary at Path: mode
// 0755, owner 0:0, modified at mtime, no user or group names.
func binaryLayer(binary []byte, mtime time.Time) (v1.Layer, error) {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzipLevel)
	if err != nil {
		return nil, err
	}
	// The gzip header has no name and no time: Go writes neither unless
	// told.
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(Path, "/"),
		Mode:     0o755,
		Size:     int64(len(binary)),
		ModTime:  mtime.UTC(),
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("could not write the layer: %w", err)
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, fmt.Errorf("could not write the layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("could not write the layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("could not compress the layer: %w", err)
	}
	compressed := gz.Bytes()
	// A gzipped opener: the tarball package takes the bytes as they are
	// (docker's layer media type) and unzips them for the diff ID.
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	})
}
