package fakeapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}}
}

// next reads one event, failing after a second.
func next(t *testing.T, w watch.Interface) string {
	t.Helper()
	select {
	case e := <-w.ResultChan():
		m := e.Object.(metav1.Object)
		if e.Type == watch.Bookmark {
			return fmt.Sprintf("BOOKMARK rv=%s end=%s", m.GetResourceVersion(), m.GetAnnotations()[metav1.InitialEventsAnnotationKey])
		}
		return fmt.Sprintf("%s %s rv=%s", e.Type, m.GetName(), m.GetResourceVersion())
	case <-time.After(time.Second):
		t.Fatal("no event within 1s")
		return ""
	}
}

func TestAStreamedInitialListEndsWithABookmark(t *testing.T) {
	// region: watch-list
	defer goleak.VerifyNone(t)
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	for _, n := range []string{"a", "b"} {
		if _, err := r.Add(pod(n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := r.Watch(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := r.Update(pod("a", map[string]string{"v": "2"})); err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED a rv=1", "ADDED b rv=2", "BOOKMARK rv=2 end=true", "MODIFIED a rv=3"}
	for _, w2 := range want {
		if got := next(t, w); got != w2 {
			t.Errorf("got event %q, want %q", got, w2)
		}
	}
	// endregion: watch-list
}

func TestAWatchFromAResourceVersionReplaysLaterChanges(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{DisableWatchList: true})
	_, _ = r.Add(pod("a", nil))
	list, err := r.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := list.(*metav1.List).ResourceVersion
	_, _ = r.Add(pod("b", nil))
	_ = r.Delete(pod("a", nil))
	w, err := r.Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []string{"ADDED b rv=2", "DELETED a rv=3"} {
		if got := next(t, w); got != want {
			t.Errorf("got event %q, want %q", got, want)
		}
	}
}

func TestALabelSelectorSeesObjectsEnterAndLeave(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	w, err := r.Watch(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_, _ = r.Add(pod("other", nil))
	_, _ = r.Add(pod("a", map[string]string{"app": "web"}))
	_, _ = r.Update(pod("other", map[string]string{"app": "web"}))
	_, _ = r.Update(pod("a", nil))
	for _, want := range []string{"ADDED a rv=2", "ADDED other rv=3", "DELETED a rv=4"} {
		if got := next(t, w); got != want {
			t.Errorf("got event %q, want %q", got, want)
		}
	}
	list, _ := r.List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if items := list.(*metav1.List).Items; len(items) != 1 {
		t.Errorf("got %d listed objects, want 1", len(items))
	}
}

func TestRefusedWatchesLeaveNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{DisableWatchList: true})
	tests := []struct {
		name string
		opts metav1.ListOptions
		want string
	}{
		{"watch-list disabled", metav1.ListOptions{SendInitialEvents: ptr.To(true)}, "not supported"},
		{"bad resourceVersion", metav1.ListOptions{ResourceVersion: "x"}, "invalid resourceVersion"},
		{"future resourceVersion", metav1.ListOptions{ResourceVersion: "99"}, "in the future"},
		{"bad selector", metav1.ListOptions{LabelSelector: "=="}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Watch(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestWritesAreChecked(t *testing.T) {
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	if _, err := r.Add(&corev1.Service{}); err == nil || !strings.Contains(err.Error(), "stores v1.Pod") {
		t.Errorf("got %v adding a Service, want a type error", err)
	}
	if _, err := r.Update(pod("missing", nil)); err == nil {
		t.Error("got no error updating a missing object")
	}
	_, _ = r.Add(pod("a", nil))
	if _, err := r.Add(pod("a", nil)); err == nil {
		t.Error("got no error adding an object twice")
	}
	if got := len(r.Calls()); got != 0 {
		t.Errorf("got %d calls recorded, want 0 before any List or Watch", got)
	}
}
