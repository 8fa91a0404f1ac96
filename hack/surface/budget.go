package main

import (
	"fmt"
	"strings"
)

// set is a budget's group of packages.
type set struct {
	Name string
	// Doc says which packages the set holds, for the report.
	Doc string
	// Has reports whether the package in dir (relative to the library's
	// module directory, slash-separated) is in the set. Packages in an
	// internal/ directory are in no set.
	Has func(dir string) bool
}

// sets are the groups of packages that have a budget of exported names.
var sets = []set{
	{
		Name: "operator",
		Doc:  "what an operator imports: every package outside x/ and internal/",
		Has:  func(dir string) bool { return !within(dir, "x") },
	},
	{
		Name: "experimental",
		Doc:  "the experimental packages, under x/",
		Has:  func(dir string) bool { return within(dir, "x") },
	},
}

// configBudget names the budget of controller.Config's fields, counted by
// countConfig.
const configBudget = "config"

// The type whose fields configBudget counts: Config of kooper/controller.
const (
	configDir  = "controller"
	configType = "Config"
)

// limit is a budget's ceiling.
type limit struct {
	Budget string // a set's name, or configBudget
	// Max is the most -check allows. Counts may go down freely; Max goes
	// down with them (-check says when it can) and goes up only in a
	// commit whose CHANGELOG.md entry says why and holds the line
	// "surface budget `<Budget>` <Max>" (TestEveryLimitIsInTheChangelog).
	Max int
	// Target is where issue 36 wants the budget to get to; for
	// information only.
	Target int
}

// limits are the budgets -check enforces: the counts of the day the check
// was written, far above the targets while the library is shrunk. Moving a
// package under x/ lowers operator and raises experimental: both limits
// change, with their CHANGELOG.md lines.
var limits = []limit{
	{Budget: "operator", Max: 178, Target: 180},
	{Budget: "experimental", Max: 36, Target: 40},
	{Budget: configBudget, Max: 12, Target: 12},
}

// within reports whether dir is top or a directory under it.
func within(dir, top string) bool {
	return dir == top || strings.HasPrefix(dir, top+"/")
}

// setCount is what a set holds in a counted library.
type setCount struct {
	Set      set
	Packages []pkgSurface
}

// Total returns the exported names of the set's packages.
func (s setCount) Total() int {
	n := 0
	for _, p := range s.Packages {
		n += len(p.Names)
	}
	return n
}

// measurement is the library measured against every budget.
type measurement struct {
	Lib      library
	Sets     []setCount
	Internal []pkgSurface // counted for information only
	Config   []string     // controller.Config's fields, nested ones included
}

// measure counts lib against every budget.
func measure(lib library) (measurement, error) {
	m := measurement{Lib: lib}
	for _, s := range sets {
		sc := setCount{Set: s}
		for _, p := range lib.Packages {
			if !p.Internal() && s.Has(p.Dir) {
				sc.Packages = append(sc.Packages, p)
			}
		}
		m.Sets = append(m.Sets, sc)
	}
	for _, p := range lib.Packages {
		if p.Internal() {
			m.Internal = append(m.Internal, p)
		}
	}
	cfg, err := countConfig(lib, configDir, configType)
	if err != nil {
		return measurement{}, err
	}
	m.Config = cfg
	return m, nil
}

// Count returns the count of budget, and whether it is known.
func (m measurement) Count(budget string) (int, bool) {
	if budget == configBudget {
		return len(m.Config), true
	}
	for _, s := range m.Sets {
		if s.Set.Name == budget {
			return s.Total(), true
		}
	}
	return 0, false
}

// Set returns the count of the set named name.
func (m measurement) Set(name string) (setCount, bool) {
	for _, s := range m.Sets {
		if s.Set.Name == name {
			return s, true
		}
	}
	return setCount{}, false
}

// limitOf returns the limit of budget.
func limitOf(budget string) (limit, bool) {
	for _, l := range limits {
		if l.Budget == budget {
			return l, true
		}
	}
	return limit{}, false
}

// overrun is a budget whose count exceeds its limit.
type overrun struct {
	Limit limit
	Count int
}

// check compares m with limits. It returns the budgets over their limit,
// and hints for those under it, whose limit can come down.
func check(m measurement) (over []overrun, hints []string, err error) {
	for _, l := range limits {
		n, ok := m.Count(l.Budget)
		if !ok {
			return nil, nil, fmt.Errorf("limit of an unknown budget %q", l.Budget)
		}
		switch {
		case n > l.Max:
			over = append(over, overrun{Limit: l, Count: n})
		case n < l.Max:
			hints = append(hints, fmt.Sprintf("surface budget `%s` is %d, below its limit %d: lower the limit to %d in hack/surface/budget.go, with the line \"surface budget `%s` %d\" in CHANGELOG.md",
				l.Budget, n, l.Max, n, l.Budget, n))
		}
	}
	for _, s := range sets {
		if _, ok := limitOf(s.Name); !ok {
			return nil, nil, fmt.Errorf("set %q has no limit", s.Name)
		}
	}
	if _, ok := limitOf(configBudget); !ok {
		return nil, nil, fmt.Errorf("budget %q has no limit", configBudget)
	}
	return over, hints, nil
}
