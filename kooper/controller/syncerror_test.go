package controller_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// poisoned fails every list and watch as a typed client does when one
// object cannot be decoded, until cured.
type poisoned struct {
	*fakeapi.Retriever
	cured atomic.Bool
}

func (p *poisoned) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if !p.cured.Load() {
		return nil, resource.ErrFormatWrong
	}
	return p.Retriever.List(ctx, opts)
}

func (p *poisoned) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if !p.cured.Load() {
		return nil, resource.ErrFormatWrong
	}
	return p.Retriever.Watch(ctx, opts)
}

func TestSyncErrorSaysWhichObjectsCannotBeDecodedUntilTheyCan(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) }) // runs after the controllers stop
			src := &poisoned{Retriever: fakeapi.NewRetriever(&corev1.Pod{}, mode.opts)}
			mustAdd(t, src.Retriever, pod("good"))
			var r controller.Retriever = src
			names := []string{"pods"}
			var ctrls []*controller.Controller
			var handlers []*recorder
			m := newMetrics()
			for _, n := range names {
				h := &recorder{}
				c, err := controller.New(controller.Config{Name: n, Handler: h, Retriever: r, ResyncInterval: -1, MetricsRecorder: m})
				if err != nil {
					t.Fatal(err)
				}
				if c.SyncError() != nil {
					t.Errorf("%s: got SyncError %v before Run, want nil", n, c.SyncError())
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				t.Cleanup(func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("Run: %v", err)
					}
				})
				ctrls = append(ctrls, c)
				handlers = append(handlers, h)
			}

			for i, c := range ctrls {
				eventually(t, names[i]+" says why it has not synced", func() bool { return c.SyncError() != nil })
				err := c.SyncError()
				if !errors.Is(err, controller.ErrDecode) || !errors.Is(err, resource.ErrFormatWrong) ||
					!strings.HasPrefix(err.Error(), names[i]+": could not decode the retrieved objects") {
					t.Errorf("%s: got SyncError %q, want ErrDecode naming the controller", names[i], err)
				}
				if c.HasSynced() {
					t.Errorf("%s: got synced, want not", names[i])
				}
			}
			if n := m.get("retrieve error decode"); n < len(names) {
				t.Errorf("got %d decode errors counted, want at least %d", n, len(names))
			}

			src.cured.Store(true)
			for i, c := range ctrls {
				eventually(t, names[i]+" syncs once the objects decode", c.HasSynced)
				eventually(t, names[i]+" handles the object", func() bool { return handlers[i].countOf("good") == 1 })
				if err := c.SyncError(); err != nil {
					t.Errorf("%s: got SyncError %v once synced, want nil", names[i], err)
				}
			}
		})
	}
}
