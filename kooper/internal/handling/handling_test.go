package handling

import (
	"fmt"
	"slices"
	"testing"
)

func TestReasonsKeepEachOnceAndTheLatest(t *testing.T) {
	r := func(why string) Reason { return Reason{Why: why} }
	many := func(n int) []Reason {
		var out []Reason
		for i := range n {
			out = append(out, Reason{Why: "retry", Detail: fmt.Sprint("error ", i)})
		}
		return out
	}
	tests := []struct {
		name string
		add  []Reason
		want []Reason
	}{
		{name: "none", want: nil},
		{name: "one", add: []Reason{r("created")}, want: []Reason{r("created")}},
		{name: "in order", add: []Reason{r("created"), r("changed"), r("resync")}, want: []Reason{r("created"), r("changed"), r("resync")}},
		{name: "each once, where it first came", add: []Reason{r("changed"), r("owned"), r("changed"), r("owned")}, want: []Reason{r("changed"), r("owned")}},
		{name: "the same why with another detail is another reason",
			add:  []Reason{{Why: "owned", Detail: "a"}, {Why: "owned", Detail: "b"}, {Why: "owned", Detail: "a"}},
			want: []Reason{{Why: "owned", Detail: "a"}, {Why: "owned", Detail: "b"}}},
		{name: "at most MaxReasons: the latest", add: many(MaxReasons + 3), want: many(MaxReasons + 3)[3:]},
		{name: "exactly MaxReasons", add: many(MaxReasons), want: many(MaxReasons)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs Reasons
			for _, a := range tt.add {
				rs.Add(a)
			}
			if got := rs.All(); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if rs.Len() != len(tt.want) {
				t.Errorf("Len is %d, want %d", rs.Len(), len(tt.want))
			}
			var strs []string
			for _, w := range tt.want {
				strs = append(strs, w.String())
			}
			if got := rs.Strings(); !slices.Equal(got, strs) {
				t.Errorf("Strings: got %q, want %q", got, strs)
			}
		})
	}
}

func TestAReasonWithNoDetailIsItsWhy(t *testing.T) {
	if got := (Reason{Why: "resync"}).String(); got != "resync" {
		t.Errorf("got %q", got)
	}
	if got := (Reason{Why: "retry", Detail: "boom"}).String(); got != "retry (boom)" {
		t.Errorf("got %q", got)
	}
}

func TestOneReasonDoesNotAllocate(t *testing.T) {
	r := Reason{Why: "changed"}
	if n := testing.AllocsPerRun(100, func() {
		var rs Reasons
		rs.Add(r)
		rs.Add(r)
	}); n != 0 {
		t.Errorf("one reason, added twice, allocated %v times", n)
	}
}
