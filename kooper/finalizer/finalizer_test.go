package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kooperkit/kooper/kooper/finalizer"
)

const name = "example.com/cleanup"

func object(deleting bool, finalizers ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "foo", Finalizers: finalizers}}
	if deleting {
		now := metav1.Now()
		cm.DeletionTimestamp = &now
	}
	return cm
}

// updater is a fake Finalizer.Update that records what it was asked to write.
type updater struct {
	err     error
	calls   int
	written []string // finalizers at the last call
}

func (u *updater) update(_ context.Context, obj metav1.Object) error {
	u.calls++
	u.written = slices.Clone(obj.GetFinalizers())
	return u.err
}

func TestHas(t *testing.T) {
	tests := []struct {
		name       string
		finalizers []string
		want       bool
	}{
		{name: "an object without finalizers does not have it", want: false},
		{name: "an object with other finalizers does not have it", finalizers: []string{"other.io/x"}, want: false},
		{name: "an object with the finalizer has it", finalizers: []string{"other.io/x", name}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := finalizer.Has(object(false, tt.finalizers...), name); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdd(t *testing.T) {
	tests := []struct {
		name        string
		finalizers  []string
		wantChanged bool
		want        []string
	}{
		{name: "a missing finalizer is appended", finalizers: []string{"other.io/x"}, wantChanged: true, want: []string{"other.io/x", name}},
		{name: "a finalizer is added to an object without any", wantChanged: true, want: []string{name}},
		{name: "a present finalizer is not added twice", finalizers: []string{name}, wantChanged: false, want: []string{name}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(false, tt.finalizers...)
			if got := finalizer.Add(obj, name); got != tt.wantChanged {
				t.Errorf("got changed %v, want %v", got, tt.wantChanged)
			}
			if got := obj.GetFinalizers(); !slices.Equal(got, tt.want) {
				t.Errorf("got finalizers %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAddDoesNotChangeAnotherCopy(t *testing.T) {
	shared := make([]string, 1, 4)
	shared[0] = "other.io/x"
	a, b := object(false), object(false)
	a.Finalizers, b.Finalizers = shared, shared

	finalizer.Add(a, name)
	finalizer.Add(b, "third.io/y")

	if got, want := a.Finalizers, []string{"other.io/x", name}; !slices.Equal(got, want) {
		t.Errorf("got finalizers %v, want %v", got, want)
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name        string
		finalizers  []string
		wantChanged bool
		want        []string
	}{
		{name: "the finalizer is removed and others are kept", finalizers: []string{"other.io/x", name, "third.io/y"}, wantChanged: true, want: []string{"other.io/x", "third.io/y"}},
		{name: "every occurrence is removed", finalizers: []string{name, name}, wantChanged: true, want: []string{}},
		{name: "a missing finalizer changes nothing", finalizers: []string{"other.io/x"}, wantChanged: false, want: []string{"other.io/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(false, tt.finalizers...)
			if got := finalizer.Remove(obj, name); got != tt.wantChanged {
				t.Errorf("got changed %v, want %v", got, tt.wantChanged)
			}
			if got := obj.GetFinalizers(); !slices.Equal(got, tt.want) {
				t.Errorf("got finalizers %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFinalizerEnsure(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name           string
		finalizerName  string
		nilUpdate      bool
		obj            *corev1.ConfigMap
		updateErr      error
		wantAdded      bool
		wantErr        error
		wantCalls      int
		wantFinalizers []string
	}{
		{name: "a missing finalizer is added and persisted", obj: object(false), wantAdded: true, wantCalls: 1, wantFinalizers: []string{name}},
		{name: "a present finalizer is not written again", obj: object(false, name), wantCalls: 0, wantFinalizers: []string{name}},
		{name: "an object being deleted gets no finalizer", obj: object(true), wantCalls: 0, wantFinalizers: nil},
		{name: "a failed write is returned and leaves the object as it was", obj: object(false, "other.io/x"), updateErr: errBoom, wantErr: errBoom, wantCalls: 1, wantFinalizers: []string{"other.io/x"}},
		{name: "a name that is not qualified is refused", finalizerName: "not a name!", obj: object(false), wantErr: finalizer.ErrInvalid},
		{name: "a missing update function is refused", nilUpdate: true, obj: object(false), wantErr: finalizer.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &updater{err: tt.updateErr}
			f := finalizer.Finalizer{Name: name, Update: u.update}
			if tt.finalizerName != "" {
				f.Name = tt.finalizerName
			}
			if tt.nilUpdate {
				f.Update = nil
			}

			added, err := f.Ensure(context.Background(), tt.obj)

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if added != tt.wantAdded {
				t.Errorf("got added %v, want %v", added, tt.wantAdded)
			}
			if u.calls != tt.wantCalls {
				t.Errorf("got %d updates, want %d", u.calls, tt.wantCalls)
			}
			if tt.wantAdded && !slices.Equal(u.written, tt.wantFinalizers) {
				t.Errorf("got written finalizers %v, want %v", u.written, tt.wantFinalizers)
			}
			if tt.wantErr == nil || tt.updateErr != nil {
				if got := tt.obj.GetFinalizers(); !slices.Equal(got, tt.wantFinalizers) {
					t.Errorf("got finalizers %v, want %v", got, tt.wantFinalizers)
				}
			}
		})
	}
}

func TestFinalizerFinalize(t *testing.T) {
	errCleanup := errors.New("cloud unavailable")
	errWrite := errors.New("conflict")
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "foo")
	tests := []struct {
		name           string
		obj            *corev1.ConfigMap
		nilCleanup     bool
		cleanupErr     error
		updateErr      error
		wantDeleting   bool
		wantErr        error
		wantCleanups   int
		wantUpdates    int
		wantFinalizers []string
	}{
		{name: "an object not being deleted is left alone", obj: object(false, name), wantFinalizers: []string{name}},
		{name: "an object being deleted is cleaned up and released", obj: object(true, "other.io/x", name), wantDeleting: true, wantCleanups: 1, wantUpdates: 1, wantFinalizers: []string{"other.io/x"}},
		{name: "an object being deleted without the finalizer needs nothing", obj: object(true, "other.io/x"), wantDeleting: true, wantFinalizers: []string{"other.io/x"}},
		{name: "a failed cleanup keeps the finalizer and is returned", obj: object(true, name), cleanupErr: errCleanup, wantDeleting: true, wantErr: errCleanup, wantCleanups: 1, wantFinalizers: []string{name}},
		{name: "a failed write keeps the finalizer and is returned", obj: object(true, name), updateErr: errWrite, wantDeleting: true, wantErr: errWrite, wantCleanups: 1, wantUpdates: 1, wantFinalizers: []string{name}},
		{name: "an object already gone when written is done", obj: object(true, name), updateErr: notFound, wantDeleting: true, wantCleanups: 1, wantUpdates: 1, wantFinalizers: []string{}},
		{name: "a missing cleanup function is refused", obj: object(true, name), nilCleanup: true, wantDeleting: true, wantErr: finalizer.ErrInvalid, wantFinalizers: []string{name}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &updater{err: tt.updateErr}
			f := finalizer.Finalizer{Name: name, Update: u.update}
			cleanups := 0
			cleanup := func(context.Context) error { cleanups++; return tt.cleanupErr }
			if tt.nilCleanup {
				cleanup = nil
			}

			deleting, err := f.Finalize(context.Background(), tt.obj, cleanup)

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if deleting != tt.wantDeleting {
				t.Errorf("got deleting %v, want %v", deleting, tt.wantDeleting)
			}
			if cleanups != tt.wantCleanups {
				t.Errorf("got %d cleanups, want %d", cleanups, tt.wantCleanups)
			}
			if u.calls != tt.wantUpdates {
				t.Errorf("got %d updates, want %d", u.calls, tt.wantUpdates)
			}
			if got := tt.obj.GetFinalizers(); !slices.Equal(got, tt.wantFinalizers) {
				t.Errorf("got finalizers %v, want %v", got, tt.wantFinalizers)
			}
		})
	}
}

func TestFinalizerRefusesInvalidNames(t *testing.T) {
	tests := []struct {
		name          string
		finalizerName string
	}{
		{name: "an empty name is refused", finalizerName: ""},
		{name: "a name with spaces is refused", finalizerName: "example.com/clean up"},
		{name: "a name with two slashes is refused", finalizerName: "example.com/a/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := finalizer.Finalizer{Name: tt.finalizerName, Update: (&updater{}).update}
			_, err := f.Finalize(context.Background(), object(true, tt.finalizerName), func(context.Context) error { return nil })
			if !errors.Is(err, finalizer.ErrInvalid) {
				t.Errorf("got error %v, want %v", err, finalizer.ErrInvalid)
			}
		})
	}
}
