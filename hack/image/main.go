// Command image packages an operator's static binary into a container image,
// in Go, without Docker: `make image` writes bin/images/<operator>.tar from
// bin/<operator>, and `make image-push` pushes the image to a registry.
//
// The image is what the Dockerfile's final stage builds, and nothing more
// (dockerfile_test.go compares the two):
//
//   - no base (scratch): the binary is static, and talks TLS only to the API
//     server, whose CA comes from the ServiceAccount mount or the kubeconfig,
//     and an operator's webhook serves its own certificate; so no CA
//     bundle, no tzdata, no /etc/passwd, no shell;
//   - one layer holding one file, the binary at /operator, mode 0755, owned by
//     0:0 so that the process cannot rewrite it;
//   - user 65532:65532, numeric so that the kubelet can check runAsNonRoot;
//     the exec-form entrypoint ["/operator"];
//   - the labels org.opencontainers.image.title, version, revision, source
//     and licenses.
//
// The same inputs make the same digest: the image's and the file's times are
// SOURCE_DATE_EPOCH (the commit time, in seconds; the Unix epoch when unset),
// the layer is compressed at a fixed gzip level, and nothing of the build
// machine (paths, users, clock) gets in.
//
// From hack/image (its own module: go-containerregistry stays out of the
// library's go.mod),
//
//	go run . -binary ../../bin/my-operator -version v0.1.0 -out ../../bin/images/my-operator.tar
//	go run . -binary ../../bin/my-operator -version v0.1.0 -push registry.example/my-operator:v0.1.0
//
// -out writes a tarball in the format of `docker save`: `docker load -i`
// loads it and `crane push` pushes it with the same digest. -push writes the
// image to the registry (credentials from the Docker config, as `docker
// login` and `crane auth login` write it) and prints the digest-pinned
// reference, repository@sha256:..., alone on stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// defaultRegistry names the tarball's image when -tag is not given, as the
// Makefile's IMAGE_REGISTRY does.
const defaultRegistry = "ghcr.io/kooperkit"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// errUsage is returned once the usage was printed.
var errUsage = errors.New("invalid arguments (see above)")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		cfg    Config
		tag    = fl.String("tag", "", "the image name recorded in the -out tarball, which docker load tags; default "+defaultRegistry+"/NAME:VERSION")
		out    = fl.String("out", "", "write the image to this tarball (docker load, crane push)")
		pushTo = fl.String("push", "", "push the image to this reference (REPOSITORY[:TAG]) and print REPOSITORY@sha256:...")
	)
	fl.StringVar(&cfg.Binary, "binary", "", "the operator's static linux binary, e.g. bin/<operator> from make build (required)")
	fl.StringVar(&cfg.Name, "name", "", "the operator's name, the image's title; default the binary's file name")
	fl.StringVar(&cfg.Version, "version", "dev", "the version the binary is stamped with (the image's version label)")
	fl.StringVar(&cfg.Revision, "revision", "", "the commit the binary is built from (the image's revision label)")
	fl.StringVar(&cfg.Source, "source", DefaultSource, "the repository the binary is built from (the image's source label)")
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: image -binary PATH [-version V] [-revision SHA] [-out FILE.tar [-tag REF]] [-push REF]   (from hack/image: go run . ...)\n\n"+
			"Packages a static operator binary as /operator on an empty base, user 65532:65532,\n"+
			"into a tarball (-out), a registry (-push), or both.\n"+
			"SOURCE_DATE_EPOCH (seconds) is the image's creation time; default the Unix epoch.")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return errUsage
	}
	if fl.NArg() > 0 {
		fl.Usage()
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	if cfg.Binary == "" || (*out == "" && *pushTo == "") {
		fl.Usage()
		return errors.New("want -binary, and -out or -push (or both)")
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(cfg.Binary)
	}
	created, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	cfg.Created = created
	// The references are checked before the image is built: a typo fails at
	// once, not after compressing the binary.
	if *tag == "" && *out != "" {
		*tag = defaultRegistry + "/" + cfg.Name + ":" + cfg.Version
	}
	var outTag name.Tag
	if *out != "" {
		if outTag, err = name.NewTag(*tag); err != nil {
			return fmt.Errorf("invalid -tag %q: %w", *tag, err)
		}
	}
	var pushRef name.Reference
	if *pushTo != "" {
		if pushRef, err = name.ParseReference(*pushTo); err != nil {
			return fmt.Errorf("invalid -push reference %q: %w", *pushTo, err)
		}
	}

	img, err := Build(cfg)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("could not compute the image's digest: %w", err)
	}
	if *out != "" {
		size, err := writeTarball(*out, outTag, img)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s: %s, %s, %s\n", *out, outTag, digest, mebibytes(size))
	}
	if pushRef != nil {
		pinned, err := push(ctx, pushRef, img)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, pinned)
	}
	return nil
}

// sourceDateEpoch parses SOURCE_DATE_EPOCH (reproducible-builds.org): whole
// seconds since the Unix epoch; empty means the epoch itself.
func sourceDateEpoch(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: want whole seconds since 1970, e.g. git log -1 --format=%%ct", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func mebibytes(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
