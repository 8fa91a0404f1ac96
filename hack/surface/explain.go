package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// explain writes why -check failed: each budget over its limit, with its
// packages' counts, largest first (or Config's fields), and what to do.
// -v lists every name.
func explain(w io.Writer, m measurement, over []overrun) {
	for _, o := range over {
		fmt.Fprintf(w, "surface budget `%s` is %d, over its limit %d (target %d).\n", o.Limit.Budget, o.Count, o.Limit.Max, o.Limit.Target)
		if o.Limit.Budget == configBudget {
			fmt.Fprintf(w, "controller.Config's fields: %s\n", strings.Join(m.Config, ", "))
		} else {
			explainSet(w, m, o.Limit.Budget)
		}
		fmt.Fprintf(w, "Shrink the surface (go run ./hack/surface -v lists every name), or raise the limit in hack/surface/budget.go in a commit whose CHANGELOG.md entry says why and holds the line \"surface budget `%s` %d\".\n\n",
			o.Limit.Budget, o.Count)
	}
}

// explainSet writes the packages of the set named name with their counts,
// largest first.
func explainSet(w io.Writer, m measurement, name string) {
	now, _ := m.Set(name)
	pkgs := slices.Clone(now.Packages)
	slices.SortStableFunc(pkgs, func(a, b pkgSurface) int { return cmp.Compare(len(b.Names), len(a.Names)) })
	fmt.Fprintf(w, "%-32s %5s\n", "package", "names")
	for _, p := range pkgs {
		fmt.Fprintf(w, "%-32s %5d\n", p.Dir, len(p.Names))
	}
}
