// Command bump moves every Kubernetes pin of the repository to one release,
// from one place:
//
//   - hack/controlplane/go.mod: k8s.io/kubernetes, the etcd its go.mod pins
//     and one replace per staging module, read from that go.mod (not kept
//     by hand);
//   - hack/controlplane/skew/go.mod: the newest complete release of the
//     minor before, whose kube-apiserver the version-skew tests run against;
//   - every other go.mod: the staging modules (k8s.io/client-go, ...) at
//     v0.MINOR.PATCH, and the benchmarks' controller-runtime at its newest
//     release built on that line;
//   - hack/codegen/generate.sh: code-generator at the staging version and
//     controller-tools at its newest release built on that line;
//   - the docs (every Markdown file but the CHANGELOG and the benchmark
//     results, and the Makefile): each old version number becomes the new.
//
// It asks the Go module proxy first and changes nothing when the proxy does
// not serve a module it needs, saying which. `make bump-kubernetes
// VERSION=1.38.0` runs it and then `make generate`.
//
//	go run ./hack/bump -version 1.38.0            # bump
//	go run ./hack/bump -version 1.38.0 -dry-run   # only say what it would pin
//	go run ./hack/bump -check                     # every pin agrees, or exit 1
//
// Its test runs the check on the repository, so a half-done bump cannot
// land.
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
)

func main() { os.Exit(bump()) }

// bump runs the command and returns its exit code.
func bump() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "bump:", err)
	}
	return exitCode(err)
}

// errDisagree is returned by -check once the problems were printed.
var errDisagree = errors.New("the pins disagree")

func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the Kubernetes release to move to, e.g. 1.38.0")
	dryRun := fs.Bool("dry-run", false, "resolve and print the pins, write nothing")
	checkOnly := fs.Bool("check", false, "check that every pin agrees with the control plane's k8s.io/kubernetes")
	root := fs.String("root", ".", "the repository root")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./hack/bump -version 1.MINOR.PATCH [-dry-run] | -check")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	dir, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	if *checkOnly {
		problems, err := check(ctx, dir)
		if err != nil {
			return err
		}
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
		}
		if len(problems) > 0 {
			return fmt.Errorf("%w: %d problems", errDisagree, len(problems))
		}
		fmt.Fprintln(stdout, "bump: every pin agrees")
		return nil
	}
	if *version == "" {
		fs.Usage()
		return fmt.Errorf("%w: -version or -check is required", errUsage)
	}
	v, err := parseVersion(*version)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	pl, err := resolve(ctx, v, stdout)
	if err != nil {
		return err
	}
	if *dryRun {
		return nil
	}
	if err := apply(ctx, dir, pl, stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "bump: done; now `make generate`, `make controlplane` and `make test`")
	return nil
}
