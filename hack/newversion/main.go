// Command newversion adds a second API version to the kind of an operator
// that make new-operator scaffolded, with the conversion between the two:
//
//	go run ./hack/newversion -name web-demo -version v1beta1
//
// (make new-version NAME=... VERSION=... runs it). The kind keeps its
// version (v1alpha1, say), still the one stored, and gains the new one,
// served beside it, with the same fields to start from. It writes:
//
//	apis/<group>/<new>/                 doc.go, register.go, types.go: a copy
//	                                    of the old version's, renamed
//	apis/<group>/<old>/conversion.go    ConvertTo and ConvertFrom, which the
//	                                    conversion webhook calls: stubs that
//	                                    copy the metadata and leave a TODO
//	apis/<group>/<old>/conversion_test.go
//	                                    round trips of 1,000 random objects of
//	                                    each version: it fails until the stubs
//	                                    convert the spec and the status
//	apis/<group>/conversion.yaml        the CRD's spec.conversion: the
//	                                    operator's webhook, through the
//	                                    Service <name>-webhook
//	operators/<name>/internal/operator/conversion.go
//	                                    the webhook's settings, served by
//	                                    every replica (conversion.Serve)
//	operators/<name>/integration/versions_test.go
//	                                    both versions read and write the same
//	                                    objects through the webhook on the
//	                                    local control plane; its RBAC
//	manifests/<name>/conversion_webhook.yaml
//	                                    the Service; deployment.yaml and
//	                                    network_policy.yaml gain its port
//	manifests/rbac/<name>/conversion_secret_role.yaml, conversion_crd_role.yaml
//	                                    the certificate's Secret, the CRD's
//	                                    caBundle, and a policy letting the
//	                                    operator change nothing else of it
//
// and edits what make new-operator marked for it (lines holding
// "+kooper:scaffold:"): the operator's Config and Run, its command's flags,
// the integration tests' operators, and the kustomizations. It marks the
// old version +kubebuilder:storageversion, adds a "Versions" section to
// the operator's README (the storage switch and the migration, to do once
// the conversion is written and deployed), then runs make generate.
//
// Everything is checked before anything is written: an operator, version
// or marker that is not there, a kind that has more than one version
// already, or a version that exists is refused with a message saying why,
// and the repository is left as it was; if make generate fails, every file
// is put back as it was and make generate runs once more.
//
// Once the conversion is written and the operator serving it deployed,
// -store (make store-version NAME=... VERSION=...) makes the new version
// the one stored and the one the operator reads:
//
//	go run ./hack/newversion -store -name web-demo -version v1beta1
//
// It moves the +kubebuilder:storageversion mark to the new version's
// types.go and switches the operator's Go files from the old version's
// packages to the new one's (the API's, and the clientset's per version:
// the import paths, the names they are imported as, the clientset's and
// informers' version methods), but for the files that import both, the
// conversion webhook's and the versions tests', its example.yaml's
// apiVersion (make run applies it), and the version its README's opening
// line names. Then it runs make generate
// (the CRD stores the new version), putting every file back if that
// fails, and go vets the operator, naming what to change where the
// versions' fields differ. What is stored already stays in the old
// version until make migrate-storage rewrites it, after the upgrade.
//
// A third version is not scaffolded: conversion.Between converts between
// two, and a kind with more converts each to and from one hub version, by
// hand.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	fmt.Fprintln(stderr, "newversion:", err)
	return 1
}

// generate runs make generate in a repository; tests replace it.
var generate = func(root string, stdout, stderr io.Writer) error {
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "generate")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make generate failed (output above): %w", err)
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newversion", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the operator, as make new-operator named it: operators/<name> (required)")
	version := fs.String("version", "", "the version to add, e.g. v1beta1 or v2: v<major>[alpha|beta<n>] (required)")
	root := fs.String("root", "", "the repository to write into (default: the one holding the working directory)")
	store := fs.Bool("store", false, "make -version, which make new-version added, the version stored and the one the operator reads (make store-version)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "newversion: unexpected arguments %q: every input is a flag\n", fs.Args())
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
	repo, err := findRepo(dir, *root == "")
	if err != nil {
		fmt.Fprintln(stderr, "newversion:", err)
		return errUsage
	}
	k, problems := read(repo, *name, *version, *store)
	if len(problems) == 0 {
		var changes map[string]change
		if *store {
			changes, problems = k.storeChanges()
		} else {
			changes, problems = k.changes()
		}
		if len(problems) == 0 {
			if *store {
				return k.applyStore(changes, stdout, stderr)
			}
			return apply(k, changes, k.newDir(), stdout, stderr)
		}
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, "newversion:", p)
	}
	fmt.Fprintln(stderr, "newversion: nothing was written")
	return errUsage
}

// findRepo returns dir, or with walkUp its nearest parent, that holds a
// go.mod beside apis/, operators/ and hack/codegen/generate.sh.
func findRepo(dir string, walkUp bool) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for root := abs; ; {
		if isRepo(root) {
			return root, nil
		}
		parent := filepath.Dir(root)
		if !walkUp || parent == root {
			return "", fmt.Errorf("%s is not a Kooper repository (a go.mod with hack/codegen/generate.sh, apis/ and operators/): run from one, or pass -root", abs)
		}
		root = parent
	}
}

func isRepo(dir string) bool {
	for _, p := range []string{"go.mod", "hack/codegen/generate.sh", "apis", "operators"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return false
		}
	}
	return true
}

// change is a file's content after the command, and before it: nil for a
// file that did not exist.
type change struct {
	before, after []byte
}

// apply writes changes, runs make generate, and puts every file back if it
// fails (and removes newDir, if it is left empty).
func apply(k kind, changes map[string]change, newDir string, stdout, stderr io.Writer) error {
	paths := make([]string, 0, len(changes))
	for p := range changes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var written []string
	undo := func() error {
		var errs []error
		for _, p := range written {
			full := filepath.Join(k.root, filepath.FromSlash(p))
			if b := changes[p].before; b != nil {
				errs = append(errs, os.WriteFile(full, b, 0o644))
			} else if err := os.Remove(full); err != nil {
				errs = append(errs, err)
			}
		}
		// The new version's directory, empty now.
		if newDir != "" {
			if err := os.Remove(filepath.Join(k.root, filepath.FromSlash(newDir))); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for _, p := range paths {
		full := filepath.Join(k.root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return errors.Join(fmt.Errorf("could not write %s: %w", p, err), undo())
		}
		if err := os.WriteFile(full, changes[p].after, 0o644); err != nil {
			return errors.Join(fmt.Errorf("could not write %s: %w", p, err), undo())
		}
		written = append(written, p)
	}
	fmt.Fprintf(stdout, "wrote %d files:\n", len(paths))
	for _, p := range paths {
		what := "changed"
		if changes[p].before == nil {
			what = "new"
		}
		fmt.Fprintf(stdout, "  %-7s %s\n", what, p)
	}
	fmt.Fprintln(stdout, "running make generate (deep copy, clientset, the CRD with both versions)")
	if err := generate(k.root, stdout, stderr); err != nil {
		undoErr := undo()
		if undoErr == nil {
			undoErr = generate(k.root, stdout, stderr)
		}
		return errors.Join(fmt.Errorf("%w; every file was put back as it was", err), undoErr)
	}
	if newDir != "" {
		fmt.Fprint(stdout, k.nextSteps())
	}
	return nil
}

// nextSteps is what the user does next.
func (k kind) nextSteps() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s %s is served beside %s, which is still stored. Next (operators/%s/README.md, \"Versions\"):\n\n", k.Kind, k.newVersion, k.oldVersion, k.name)
	fmt.Fprintf(&b, "  1. Change apis/%s/%s/types.go as the new version should be, then make generate.\n", k.short, k.newVersion)
	fmt.Fprintf(&b, "  2. Write the conversion: the TODOs of apis/%s/%s/conversion.go. Until then its round trips fail:\n", k.short, k.oldVersion)
	fmt.Fprintf(&b, "       go test ./apis/%s/%s/\n", k.short, k.oldVersion)
	fmt.Fprintf(&b, "  3. Both versions on the local control plane, through the operator's webhook:\n")
	fmt.Fprintf(&b, "       go test -run 'TestBothVersions|TestRBACConversion' ./operators/%s/integration/\n", k.name)
	fmt.Fprintf(&b, "  4. Deploy it (make upgrade OPERATOR=%s IMG=<image>), then store %s (make store-version NAME=%s VERSION=%s) and migrate (README).\n", k.name, k.newVersion, k.name, k.newVersion)
	fmt.Fprintf(&b, "\nNot done for you: a CHANGELOG line under Unreleased.\n")
	return b.String()
}
