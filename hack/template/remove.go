package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/kooperkit/kooper/hack/internal/inventory"
)

// removeOperator is the remove-operator command.
func removeOperator(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("remove-operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the operator to remove: a directory operators/<name> with cmd/<name> (required)")
	root := fs.String("root", "", "the repository (default: the one holding the working directory)")
	dryRun := fs.Bool("dry-run", false, "print what would go and change, and change nothing")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "template: remove-operator: unexpected arguments %q: every input is a flag\n", fs.Args())
		return errUsage
	}
	refuse := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "template: remove-operator: "+format+"\n", a...)
		fmt.Fprintln(stderr, "template: remove-operator: nothing was changed")
		return errUsage
	}
	if *name == "" {
		return refuse("-name is required: the operator to remove (make remove-operator NAME=...)")
	}
	dir, err := findRoot(cmp.Or(*root, "."), *root == "")
	if err != nil {
		return refuse("%v", err)
	}
	repo, err := inventory.Open(dir)
	if err != nil {
		return refuse("%v", err)
	}
	plan, err := repo.PlanRemoval(*name)
	if errors.Is(err, inventory.ErrNoOperator) {
		return refuse("%v", err)
	}
	if err != nil {
		return fmt.Errorf("could not plan the removal (nothing was changed): %w", err)
	}
	printPlan(stdout, plan)
	if len(plan.Problems) > 0 {
		for _, p := range plan.Problems {
			fmt.Fprintln(stderr, "template: remove-operator:", p)
		}
		return refuse("%s is not removed while the problems above are there: mark what quotes or links it, or fix the markers", *name)
	}
	if *dryRun {
		fmt.Fprintln(stdout, "dry run: nothing was changed")
		return nil
	}

	undo, err := plan.Apply(dir)
	if err != nil {
		return err
	}
	edited := slices.Sorted(maps.Keys(plan.Edit))
	for _, step := range []func() error{
		func() error { return gofmt(dir, edited, stdout, stderr) },
		func() error { return generate(dir, stdout, stderr) },
		func() error { return tidy(dir, stdout, stderr) },
	} {
		if err := step(); err != nil {
			return restore(dir, fmt.Errorf("the removal of %s failed, and was undone: %w", *name, err), undo, stdout, stderr)
		}
	}
	fmt.Fprintf(stdout, "\noperator %s is removed; make test checks what is left.\n", *name)
	if len(plan.Mentions) > 0 {
		fmt.Fprintf(stdout, "\nLeft to you: these files still name %s (prose, examples, the CHANGELOG's history); review them:\n", *name)
		for _, m := range plan.Mentions {
			fmt.Fprintf(stdout, "  %s\n", m)
		}
	}
	return nil
}

// printPlan prints what goes and what changes.
func printPlan(w io.Writer, p *inventory.Plan) {
	fmt.Fprintf(w, "removing operator %s:\n", p.Operator)
	for _, rm := range p.Remove {
		fmt.Fprintf(w, "  remove %s (%s)\n", rm.Path, rm.Why)
	}
	for _, f := range slices.Sorted(maps.Keys(p.Edit)) {
		fmt.Fprintf(w, "  edit   %s (what its markers give %s)\n", f, p.Operator)
	}
	for _, u := range p.Unlinked {
		fmt.Fprintf(w, "  unlink %s (a link to what goes: its text stays)\n", u)
	}
	for _, k := range p.Kept {
		fmt.Fprintf(w, "  keep   API group %s: another operator imports it\n", k)
	}
}
