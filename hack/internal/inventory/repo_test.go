package inventory

import (
	"strings"
	"testing"
)

// The repository's own operators can each be removed by make
// remove-operator with nothing left dangling: no include or link of what
// goes outside what is marked as its own, no malformed marker, and no
// marker of an operator that is not there. The plans are logged.
func TestEveryOperatorOfTheRepositoryCanBeRemoved(t *testing.T) {
	r, err := Open("../../..")
	if err != nil {
		t.Fatal(err)
	}
	problems, err := r.Check()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	for _, name := range r.Operators {
		p, err := r.PlanRemoval(name)
		if err != nil {
			t.Fatal(err)
		}
		var groups []string
		for _, g := range p.Groups {
			groups = append(groups, g.Name)
		}
		t.Logf("%s: removes %d paths and the API groups %q, edits %d files; %d files still mention it", name, len(p.Remove), groups, len(p.Edit), len(p.Mentions))
		t.Logf("%s: mentioned in %s", name, strings.Join(p.Mentions, ", "))
	}
}
