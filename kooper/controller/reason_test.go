package controller_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// whyLog is a handler of ConfigMaps that records why each handling ran,
// as "name: reason, reason", and answers with answer (nil: success).
type whyLog struct {
	mu     sync.Mutex
	seen   []string
	answer func(cm *corev1.ConfigMap) error
}

func (w *whyLog) Handle(ctx context.Context, obj kruntime.Object) error {
	cm := obj.(*corev1.ConfigMap)
	var rs []string
	for _, r := range controller.Reasons(ctx) {
		rs = append(rs, r.String())
	}
	w.mu.Lock()
	w.seen = append(w.seen, cm.Name+": "+strings.Join(rs, ", "))
	answer := w.answer
	w.mu.Unlock()
	if answer != nil {
		return answer(cm)
	}
	return nil
}

// saw waits until a handling of the line want ran.
func (w *whyLog) saw(t *testing.T, want string) {
	t.Helper()
	eventually(t, "a handling of "+want, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return slices.Contains(w.seen, want)
	})
}

// Each reason, driven once: the handler sees why it runs.
func TestTheHandlerKnowsWhyItRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	readers := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	listed := mustAdd(t, cms, ownerCM("listed", "uid-listed")).(*corev1.ConfigMap)

	var failOnce, requeueOnce sync.Once
	w := &whyLog{answer: func(cm *corev1.ConfigMap) error {
		var err error
		switch cm.Data["do"] {
		case "fail":
			failOnce.Do(func() { err = errors.New("boom") })
		case "requeue":
			requeueOnce.Do(func() { err = controller.RequeueAfter(10 * time.Millisecond) })
		}
		return err
	}}
	children := controller.Owns[*corev1.Secret](secrets)
	read := controller.Watches(readers, func(s *corev1.Secret) []string { return []string{"ns/" + s.Labels["reader"]} })
	c, err := controller.New(controller.Config{Name: "why", Handler: w, Retriever: cms,
		ResyncInterval: -1, RetryBaseDelay: time.Millisecond}, children, read)
	if err != nil {
		t.Fatal(err)
	}
	stop := runInBackground(t, c.Run)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()

	w.saw(t, "listed: initial")
	created := mustAdd(t, cms, ownerCM("created", "uid-created")).(*corev1.ConfigMap)
	w.saw(t, "created: created")

	spec := created.DeepCopy()
	spec.Generation = created.Generation + 1
	mustUpdate(t, cms, spec)
	w.saw(t, "created: generation")

	meta := listed.DeepCopy()
	meta.Labels = map[string]string{"touched": "yes"}
	mustUpdate(t, cms, meta)
	w.saw(t, "listed: changed")

	mustAdd(t, secrets, childOf("child", created))
	w.saw(t, "created: owned (Secret ns/child)")
	mustAdd(t, readers, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "read",
		Labels: map[string]string{"reader": "listed"}}})
	w.saw(t, "listed: watched (Secret ns/read)")

	failing := ownerCM("failing", "uid-failing")
	failing.Data = map[string]string{"do": "fail"}
	mustAdd(t, cms, failing)
	w.saw(t, "failing: created")
	w.saw(t, "failing: retry (boom)")

	requeued := ownerCM("requeued", "uid-requeued")
	requeued.Data = map[string]string{"do": "requeue"}
	mustAdd(t, cms, requeued)
	w.saw(t, "requeued: requeue (10ms)")

	c.Enqueue("ns/listed")
	w.saw(t, "listed: enqueued (controller_test.TestTheHandlerKnowsWhyItRuns)")
}

// The reasons that need a controller of their own: a resync, a takeover,
// and a wait for the right to handle.
func TestTheHandlerKnowsWhenItRunsAgainAnywayOrLate(t *testing.T) {
	t.Run("resync", func(t *testing.T) {
		defer goleak.VerifyNone(t)
		cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
		mustAdd(t, cms, ownerCM("a", "uid-a"))
		w := &whyLog{}
		stop := start(t, controller.Config{Name: "why", Handler: w, Retriever: cms, ResyncInterval: 50 * time.Millisecond})
		w.saw(t, "a: initial")
		w.saw(t, "a: resync")
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	t.Run("takeover", func(t *testing.T) {
		defer goleak.VerifyNone(t)
		cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
		mustAdd(t, cms, ownerCM("a", "uid-a"))
		w := &whyLog{}
		c, err := controller.New(controller.Config{Name: "why", Handler: w, Retriever: cms, ResyncInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		leading := make(chan struct{})
		stop := runInBackground(t, func(ctx context.Context) error { return c.RunWarm(ctx, leading) })
		eventually(t, "the standby's cache syncs", c.HasSynced)
		close(leading)
		w.saw(t, "a: takeover")
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	t.Run("waited", func(t *testing.T) {
		defer goleak.VerifyNone(t)
		cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
		w := &whyLog{}
		c, err := controller.New(controller.Config{Name: "why", Handler: w, Retriever: cms, ResyncInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBackground(t, c.Run)
		eventually(t, "the cache syncs", c.HasSynced)
		c.SetValidUntil(time.Now().Add(-time.Minute)) // no right to handle
		mustAdd(t, cms, ownerCM("a", "uid-a"))
		settle()
		c.SetValidUntil(time.Time{})
		// Refused, then queued again a second later: told it was created,
		// and that it waited.
		w.saw(t, "a: created, waited")
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
}
