// Command template makes this repository yours, in two commands that each
// leave a tree where make lint, make verify-generate and make test-unit
// pass:
//
//	go run ./hack/template remove-operator -name pod-terminator
//	go run ./hack/template rename -module example.com/acme/platform -group-suffix acme.example.com
//
// (make remove-operator NAME=..., make rename MODULE=... GROUP_SUFFIX=...
// [REGISTRY=...]).
//
// remove-operator removes an operator and everything that is only its
// own, found in the tree by package inventory: its directories, the API
// group no other operator imports, the files that import what goes, its
// Grafana dashboard, and what markers give it (+kooper:operator=<name>,
// in any file, see package inventory). Then it formats what it edited,
// runs make generate and go mod tidy in every module.
//
// rename gives the repository another module path, another suffix for its
// API groups and another image registry: it rewrites every go.mod it finds
// (go mod tidy in each), every file naming the old module path, the
// OpenAPI model packages, the API groups in plain and regular-expression
// form, and the image names, then runs gofmt and make generate.
//
// Both check their input and the tree before they change anything: a
// refusal (exit status 2) says why and leaves the tree as it was. If a
// step fails after the changes began (make generate, say), the files they
// changed are put back, make generate is run again to restore what it had
// written, and the exit status is 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(exit(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// errUsage marks a command line or an input that cannot be acted on: why
// has been printed, and nothing was changed.
var errUsage = errors.New("usage")

// exit returns the exit status for run's error: 0 for none or -h, 2 for a
// refusal (already printed), else 1 after printing the error.
func exit(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintln(stderr, "template:", err)
	return 1
}

const usage = `usage:
  go run ./hack/template remove-operator -name NAME [-dry-run]
  go run ./hack/template rename -module PATH -group-suffix DOMAIN [-registry REGISTRY] [-dry-run]
`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "remove-operator":
		return removeOperator(args[1:], stdout, stderr)
	case "rename":
		return rename(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "template: unknown command %q\n%s", args[0], usage)
	return errUsage
}
