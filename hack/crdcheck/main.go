// Command crdcheck validates the repository's generated CRDs as the API
// server will when they are applied, so that a CRD it would refuse fails
// `make verify-generate` instead of `kubectl apply`.
//
// controller-gen writes what the markers say without asking whether the API
// server accepts it: a CEL rule over a list without maxItems, a rule that
// does not compile or a schema that is not structural is generated, and
// until now was first refused on apply. crdcheck runs the kube-apiserver's
// own create validation (k8s.io/apiextensions-apiserver, at the version of
// the control plane) on every CustomResourceDefinition of a directory: the
// structural schema rules, the CEL compilation and its cost estimate, and
// the strict decoding that rejects unknown and duplicate fields.
//
// From hack/crdcheck (its own module: the validation brings the API
// server's dependencies, which stay out of the library's go.mod),
//
//	go run .                     # every CRD under the repository's manifests/crds
//	go run . DIR                 # every CRD under DIR
//
// It walks DIR, reads every YAML document of every .yaml and .yml file and
// validates those of kind CustomResourceDefinition; other kinds, such as the
// kustomization.yaml files, are skipped. Each error is printed as
//
//	FILE: CRD NAME: THE API SERVER'S MESSAGE
//
// and the exit status is 1 if there is any, or if DIR holds no CRD at all.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// module is the repository's module path: the directory whose go.mod
// declares it is the root.
const module = "github.com/kooperkit/kooper"

// crdsDir is where `make generate` writes the CRDs, relative to the root.
const crdsDir = "manifests/crds"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "crdcheck:", err)
		os.Exit(1)
	}
}

// errRefused is returned by run once the problems were printed.
var errRefused = errors.New("the API server would refuse these CRDs (see above)")

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("crdcheck", flag.ContinueOnError)
	fl.SetOutput(stdout)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: crdcheck [DIR]   (from hack/crdcheck: go run . [DIR])\n\n"+
			"Validates every CustomResourceDefinition under DIR as the API server does on create.\n"+
			"DIR defaults to "+crdsDir+" of the repository found above the working directory.")
	}
	if err := fl.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fl.NArg() > 1 {
		fl.Usage()
		return fmt.Errorf("got %d directories, want at most one", fl.NArg())
	}

	// dir is walked; shown prefixes the file paths printed, relative to the
	// root by default so that they read the same from any directory.
	dir, shown := fl.Arg(0), fl.Arg(0)
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("could not read the working directory: %w", err)
		}
		root, err := findRoot(wd)
		if err != nil {
			return err
		}
		dir, shown = filepath.Join(root, filepath.FromSlash(crdsDir)), crdsDir
	}

	res, err := checkDir(ctx, dir)
	if err != nil {
		return err
	}
	for _, p := range res.Problems {
		p.File = filepath.Join(shown, p.File)
		fmt.Fprintln(stdout, p)
	}
	if len(res.Problems) > 0 {
		return errRefused
	}
	if res.CRDs == 0 {
		return fmt.Errorf("no CustomResourceDefinition in %s", shown)
	}
	fmt.Fprintf(stdout, "%d CRDs in %s pass the API server's validation\n", res.CRDs, shown)
	return nil
}

// findRoot returns dir or the nearest directory above it whose go.mod
// declares module. The go.mod files of the repository's other modules
// (this one's included) declare longer paths and are passed over.
func findRoot(dir string) (string, error) {
	// The module line whole, with a newline before the file so that the
	// first line matches too.
	want := []byte("\nmodule " + module + "\n")
	for d := dir; ; {
		gomod, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.Contains(append([]byte("\n"), gomod...), want) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod of %s in %s or above: run from the repository or name the directory", module, dir)
		}
		d = parent
	}
}
