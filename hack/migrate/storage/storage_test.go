package storage

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API server's side of the rewrite is tested on a real one
// (operators/pod-terminator/integration TestStoredObjectsMoveToTheStorageVersion);
// these cases are the answers a real one gives only by chance: a write
// between the list and the patch, a deletion, throttling, a refusal, an
// expired list.

var gvr = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "things"}

// answer is what the fake API server says to one patch of one object, in
// order; past the last, the object is rewritten.
type answer = error

func TestTheRewriteCountsEachOutcomeAndRefusesToFinishOverARefusal(t *testing.T) {
	conflict := apierrors.NewConflict(gvr.GroupResource(), "x", errors.New("the object has been modified"))
	gone := apierrors.NewNotFound(gvr.GroupResource(), "x")
	throttled := apierrors.NewTooManyRequests("slow down", 0)
	refused := apierrors.NewForbidden(gvr.GroupResource(), "x", errors.New("admission webhook denied the request"))
	tests := []struct {
		name     string
		answers  map[string][]answer // by object name
		already  []string            // stored in the storage version: the patch writes nothing
		pages    int64
		expire   int // this many first continued lists answer 410
		want     Report
		wantErr  string
		wantList int // list requests
	}{
		{name: "every object rewritten, in pages", pages: 2,
			want: Report{Listed: 5, Rewritten: 5}, wantList: 3},
		{name: "written since, deleted since, stored already", pages: 10,
			answers: map[string][]answer{"a": {conflict}, "b": {gone}}, already: []string{"c"},
			want: Report{Listed: 5, Rewritten: 2, ChangedSince: 1, Gone: 1, Already: 1}, wantList: 1},
		{name: "throttled, then rewritten", pages: 10,
			answers: map[string][]answer{"d": {throttled, throttled}},
			want:    Report{Listed: 5, Rewritten: 5}, wantList: 1},
		{name: "a list that expired is started again", pages: 2, expire: 1,
			// a and b first, then from the start: a and b again (stored
			// already), c, d, e.
			already: nil, want: Report{Listed: 7, Rewritten: 7}, wantList: 5},
		{name: "a refusal is named, after the rest is written", pages: 10,
			answers: map[string][]answer{"b": {refused}},
			want:    Report{Listed: 5, Rewritten: 4}, wantList: 1,
			wantErr: "1 of 5 objects were not rewritten, and storedVersions is left as it was: ns/b: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &fakeResource{t: t, names: []string{"a", "b", "c", "d", "e"}, pages: tt.pages, expire: tt.expire, answers: tt.answers, already: tt.already}
			r := &Report{}
			m := &migration{opts: Options{PageSize: tt.pages, Logf: t.Logf}, crd: &apiextensionsv1.CustomResourceDefinition{}, report: r}
			err := m.rewrite(context.Background(), res)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("rewrite: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("rewrite: got error %v, want one saying %q", err, tt.wantErr)
			}
			if !reflect.DeepEqual(*r, tt.want) {
				t.Errorf("got %+v, want %+v", *r, tt.want)
			}
			if res.lists != tt.wantList {
				t.Errorf("listed %d times, want %d", res.lists, tt.wantList)
			}
		})
	}
}

// fakeResource serves names in namespace ns, pages at a time, answering
// as the test case says.
type fakeResource struct {
	t              *testing.T
	names          []string
	pages          int64
	expire         int
	answers        map[string][]answer
	already        []string
	lists, expired int
}

func (f *fakeResource) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	f.lists++
	if opts.Limit != f.pages {
		f.t.Errorf("listed %d at a time, want %d", opts.Limit, f.pages)
	}
	from := 0
	if opts.Continue != "" {
		if f.expired < f.expire {
			f.expired++
			return nil, apierrors.NewResourceExpired("the continue token expired")
		}
		if _, err := fmt.Sscan(opts.Continue, &from); err != nil {
			f.t.Fatalf("continue token %q: %v", opts.Continue, err)
		}
	}
	to := min(from+int(opts.Limit), len(f.names))
	list := &unstructured.UnstructuredList{}
	for _, n := range f.names[from:to] {
		u := unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace("ns")
		u.SetName(n)
		u.SetResourceVersion("1")
		list.Items = append(list.Items, u)
	}
	if to < len(f.names) {
		list.SetContinue(fmt.Sprint(to))
	}
	return list, nil
}

func (f *fakeResource) Patch(_ context.Context, namespace, name string, body []byte) (*unstructured.Unstructured, error) {
	if got, want := string(body), `{"metadata":{"resourceVersion":"1"}}`; got != want {
		f.t.Errorf("patched %s, want %s", got, want)
	}
	if namespace != "ns" {
		f.t.Errorf("patched in namespace %q, want ns", namespace)
	}
	if a := f.answers[name]; len(a) > 0 {
		f.answers[name] = a[1:]
		return nil, a[0]
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetName(name)
	u.SetResourceVersion("2")
	if slices.Contains(f.already, name) {
		u.SetResourceVersion("1")
	}
	return u, nil
}

// crds is a CRD client holding one CRD, whose storage version may change
// before the update, as a user's kubectl apply would.
type crds struct {
	crd     *apiextensionsv1.CustomResourceDefinition
	onGet   func(*apiextensionsv1.CustomResourceDefinition)
	updates int
}

func (c *crds) Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error) {
	if c.onGet != nil {
		c.onGet(c.crd)
	}
	return c.crd.DeepCopy(), nil
}

func (c *crds) UpdateStatus(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition, _ metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error) {
	c.updates++
	c.crd = crd.DeepCopy()
	return crd, nil
}

func twoVersions(storage string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1", Storage: storage == "v1"}, {Name: "v2", Storage: storage == "v2"},
		}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1", "v2"}},
	}
}

func TestStoredVersionsAreSetOnlyIfTheStorageVersionStayed(t *testing.T) {
	t.Run("it stayed", func(t *testing.T) {
		c := &crds{crd: twoVersions("v2")}
		m := &migration{crds: c, crd: c.crd, report: &Report{Version: "v2"}}
		if err := m.setStoredVersions(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := c.crd.Status.StoredVersions; len(got) != 1 || got[0] != "v2" || c.updates != 1 {
			t.Errorf("storedVersions %v after %d updates, want [v2] after 1", got, c.updates)
		}
	})
	t.Run("it changed while the objects were written", func(t *testing.T) {
		c := &crds{crd: twoVersions("v2")}
		c.onGet = func(crd *apiextensionsv1.CustomResourceDefinition) { *crd = *twoVersions("v1") }
		m := &migration{crds: c, crd: c.crd, report: &Report{Version: "v2"}}
		err := m.setStoredVersions(context.Background())
		if err == nil || !strings.Contains(err.Error(), "changed from v2 to v1") {
			t.Fatalf("got %v, want an error saying the storage version changed", err)
		}
		if c.updates != 0 {
			t.Errorf("storedVersions was updated %d times, want untouched", c.updates)
		}
	})
}
