// Command newoperator scaffolds a complete operator in this repository's own
// shape, next to the operators of operators/:
//
//	go run ./hack/newoperator -name web-demo -group webapps.example.com \
//		-kind WebApp -scope Namespaced -owns ConfigMap,Deployment
//
// (make new-operator NAME=... GROUP=... KIND=... SCOPE=... OWNS=... runs it).
// It writes, and only creates, these directories:
//
//	apis/<group's first label>/v1alpha1/   doc.go, register.go, types.go: the kind,
//	                                       its spec (one example field), status
//	                                       (Ready, observedGeneration), list
//	operators/<name>/                      cmd/<name>, internal/handler,
//	                                       internal/operator, integration, README.md,
//	                                       example.yaml (make run applies it)
//	manifests/rbac/<name>/                 the operator's own namespace
//	                                       kooper-<name>, least-privilege RBAC (a
//	                                       test compares it); with -owns,
//	                                       children.yaml: the Role on the owned
//	                                       kinds and the admission policies
//	                                       keeping its writes to the objects its
//	                                       kind controls, and for a
//	                                       cluster-scoped kind the namespace
//	                                       those are made in, kooper-<name>-children
//	manifests/<name>/                      the kustomization make deploy applies
//
// then runs make generate, which adds the deep-copy functions, the typed
// clientset, apply configurations, listers, informers and the CRD
// (manifests/crds/<group's first label>/). The new operator builds, and its
// unit and integration tests pass, as it comes. Its handler writes each
// kind the custom resource owns (-owns) with server-side apply, with a
// controller owner reference, and applies the Ready condition and
// observedGeneration; each owned kind is a source of the custom resource's
// controller (controller.Owns, given to controller.New), whose changes and
// deletions queue the owner and whose cache the handler reads: with
// -owns Deployment, the custom resource is Ready once its Deployment is.
// Adding a field and a child edits three files, as the README says: the
// types, the handler's children.go and manifests/rbac/<name>/children.yaml;
// the tests check every resource the handler owns alike. The integration
// tests run on a control plane with kube-controller-manager
// and a kwok node: the Deployment's pods become ready, and the garbage
// collector deletes the children.
//
// Everything is checked before anything is written: a name, group or kind
// that would not be valid, an owned kind it does not know, or a directory,
// group or kind that exists already is refused with a message saying why,
// and the repository is left as it was. The files are written into a
// temporary directory first and moved into place together. If make generate
// fails, the new directories are removed again and make generate is run once
// more to restore what it had changed.
//
// The generated Go is built here as text, its imports found by parsing it,
// then formatted with go/format; the flags, the repository's module path and
// what already exists are the only input. The rest of the repository finds
// the new operator by its directory (operators/<name>/cmd/<name>): make
// build, deploy and run, a generated Grafana dashboard, the docs index and
// the manifests tests. What is left to do by hand (a CHANGELOG line, the
// READMEs describing each API group) it prints at the end.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(exit(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// errUsage marks a command line that cannot be acted on: the flag package or
// the validation has printed why.
var errUsage = errors.New("usage")

// exit returns the exit status for run's error: 0 for none or -h, 2 for a
// command line refused (already printed), else 1 after printing the error.
func exit(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintln(stderr, "newoperator:", err)
	return 1
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newoperator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var in input
	fs.StringVar(&in.Name, "name", "", "the operator's name, a DNS label: operators/<name>, its ServiceAccount, Lease and Deployment (required)")
	fs.StringVar(&in.Group, "group", "", "the API group of its custom resource, e.g. webapps.example.com; its first label names apis/<label> (required)")
	fs.StringVar(&in.Kind, "kind", "", "the kind of its custom resource, UpperCamelCase, e.g. WebApp (required)")
	fs.StringVar(&in.Scope, "scope", "", "Cluster or Namespaced: the custom resource's scope (required)")
	fs.StringVar(&in.Owns, "owns", "", "comma-separated kinds the custom resource owns, each watched as a source of its controller: "+strings.Join(knownKindNames(), ", "))
	root := fs.String("root", "", "the repository to write into (default: the one holding the working directory)")
	rbacOnly := fs.String("rbac-only", "", "write only the operator's RBAC and admission policy (what manifests/rbac/<name> would hold) into this `directory`, to review them or apply them to a test cluster; the repository is not written")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "newoperator: unexpected arguments %q: every input is a flag\n", fs.Args())
		return errUsage
	}

	dir := *root
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = wd
	}
	repo, err := openRepo(dir, *root == "")
	if err != nil {
		fmt.Fprintln(stderr, "newoperator:", err)
		return errUsage
	}
	op, problems := in.validate(repo)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, "newoperator:", p)
		}
		fmt.Fprintln(stderr, "newoperator: nothing was written")
		return errUsage
	}

	files, err := render(op)
	if err != nil {
		return fmt.Errorf("could not render the operator (nothing was written): %w", err)
	}
	if *rbacOnly != "" {
		return writeRBAC(*rbacOnly, op, files, stdout)
	}
	if err := writeAll(repo.root, op.dirs(), files); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d files into %s\n", len(files), strings.Join(op.dirs(), ", "))
	fmt.Fprintln(stdout, "running make generate (deep copy, clientset, listers, informers, CRD)")
	if err := generate(repo.root, stdout, stderr); err != nil {
		undoErr := undo(repo.root, op.dirs(), stdout, stderr)
		return errors.Join(fmt.Errorf("%w; the new directories were removed", err), undoErr)
	}
	fmt.Fprint(stdout, nextSteps(op))
	return nil
}

// writeRBAC writes the files of manifests/rbac/<name> into dir.
func writeRBAC(dir string, op operator, files map[string][]byte, stdout io.Writer) error {
	prefix := "manifests/rbac/" + op.Name + "/"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := 0
	for name, b := range files {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o644); err != nil {
			return err
		}
		n++
	}
	fmt.Fprintf(stdout, "wrote the %d files of %s into %s\n", n, prefix, dir)
	return nil
}

// generate runs make generate in root.
func generate(root string, stdout, stderr io.Writer) error {
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "generate")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make generate failed (output above): %w", err)
	}
	return nil
}

// undo removes the directories written, then runs make generate again so
// that the generated code matches the hand-written types once more.
func undo(root string, dirs []string, stdout, stderr io.Writer) error {
	var errs []error
	for _, d := range dirs {
		if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(d))); err != nil {
			errs = append(errs, err)
		}
	}
	if err := generate(root, stdout, stderr); err != nil {
		errs = append(errs, fmt.Errorf("could not restore the generated code: %w", err))
	}
	return errors.Join(errs...)
}

// nextSteps is what the user does next, and what the generator leaves to
// them.
func nextSteps(op operator) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\noperator %s is ready: see operators/%s/README.md. Try it:\n\n", op.Name, op.Name)
	fmt.Fprintf(&b, "  make controlplane prometheus        # once: the tools its integration tests use, cached\n")
	fmt.Fprintf(&b, "  go test -race ./operators/%s/...   # the first -race build: about 3 minutes on 2 cores\n", op.Name)
	fmt.Fprintf(&b, "  go run ./operators/%[1]s/cmd/%[1]s -kubeconfig .devcluster/kubeconfig -leader-elect=false   # with make devcluster running\n", op.Name)
	fmt.Fprintf(&b, "\nNot wired yet (edit these by hand):\n")
	for _, todo := range op.todos() {
		fmt.Fprintf(&b, "  - %s\n", todo)
	}
	return b.String()
}
