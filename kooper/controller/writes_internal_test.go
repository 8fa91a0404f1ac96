package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/internal/handling"
)

func TestAPIPathsNameTheirResourceAndNamespace(t *testing.T) {
	tests := []struct {
		path string
		want apiPath
		ok   bool
	}{
		{"/api/v1/namespaces/ns/pods", apiPath{"", "pods", "ns"}, true},
		{"/api/v1/namespaces/ns/pods/p/eviction", apiPath{"", "pods", "ns"}, true},
		{"/api/v1/pods", apiPath{"", "pods", ""}, true},
		{"/api/v1/namespaces", apiPath{"", "namespaces", ""}, true},
		{"/api/v1/namespaces/tenant-a", apiPath{"", "namespaces", ""}, true},
		{"/api/v1/namespaces/tenant-a/status", apiPath{"", "namespaces", ""}, true},
		{"/api/v1/namespaces/tenant-a/finalize", apiPath{"", "namespaces", ""}, true},
		{"/apis/apps/v1/namespaces/ns/deployments/d/scale", apiPath{"apps", "deployments", "ns"}, true},
		{"/apis/tenancy.kooperkit.io/v1alpha1/tenants/t/status", apiPath{"tenancy.kooperkit.io", "tenants", ""}, true},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", apiPath{"rbac.authorization.k8s.io", "clusterroles", ""}, true},
		{"/healthz", apiPath{}, false},
		{"/apis/apps", apiPath{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := parsePath(tc.path)
			if got != tc.want || ok != tc.ok {
				t.Errorf("parsePath(%q) = %+v, %t; want %+v, %t", tc.path, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestACacheSeesTheWritesOfWhatItLists(t *testing.T) {
	tests := []struct {
		name  string
		lists string // a list's URL
		w     handling.Write
		want  bool
	}{
		{"same resource, every namespace", "/api/v1/configmaps", handling.Write{Resource: "configmaps", Namespace: "a", Name: "x"}, true},
		{"another resource", "/api/v1/configmaps", handling.Write{Resource: "secrets", Namespace: "a", Name: "x"}, false},
		{"another group", "/apis/apps/v1/deployments", handling.Write{Group: "extensions", Resource: "deployments", Namespace: "a"}, false},
		{"its namespace", "/api/v1/namespaces/a/configmaps", handling.Write{Resource: "configmaps", Namespace: "a"}, true},
		{"another namespace", "/api/v1/namespaces/a/configmaps", handling.Write{Resource: "configmaps", Namespace: "b"}, false},
		{"labels match", "/api/v1/configmaps?labelSelector=role%3Dchild", handling.Write{Resource: "configmaps", Labels: map[string]string{"role": "child"}}, true},
		{"labels do not", "/api/v1/configmaps?labelSelector=role%3Dchild", handling.Write{Resource: "configmaps", Labels: map[string]string{"role": "parent"}}, false},
		{"its name", "/api/v1/configmaps?fieldSelector=metadata.name%3Dx", handling.Write{Resource: "configmaps", Name: "x"}, true},
		{"another name", "/api/v1/configmaps?fieldSelector=metadata.name%3Dx", handling.Write{Resource: "configmaps", Name: "y"}, false},
		{"not this namespace", "/api/v1/configmaps?fieldSelector=metadata.namespace%21%3Dkube-system", handling.Write{Resource: "configmaps", Namespace: "kube-system"}, false},
		{"a field it cannot tell", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", handling.Write{Resource: "pods", Name: "p"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &cacheView{}
			u, err := url.Parse(tc.lists)
			if err != nil {
				t.Fatal(err)
			}
			v.learn(u)
			if got := v.sees(tc.w); got != tc.want {
				t.Errorf("a cache listing %s sees %+v: %t, want %t", tc.lists, tc.w, got, tc.want)
			}
		})
	}
	if (&cacheView{}).sees(handling.Write{Resource: "configmaps"}) {
		t.Errorf("a cache that has not listed yet sees a write")
	}
}

// recorded is a handling.Writes keeping what it was told.
type recorded struct{ writes []handling.Write }

func (r *recorded) Wrote(_ string, w handling.Write) { r.writes = append(r.writes, w) }

// TestTheTransportRecordsWhatAHandlingWrote runs typed clients (protobuf)
// and JSON answers through TrackWrites against a fake API server.
func TestTheTransportRecordsWhatAHandlingWrote(t *testing.T) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/namespaces/ns/pods/p/eviction":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
		case r.URL.Path == "/api/v1/namespaces/ns/configmaps" && r.Method == http.MethodPost:
			var buf bytes.Buffer
			cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: "child-x1", ResourceVersion: "42", Labels: map[string]string{"role": "child"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
			}}
			if err := pb.Encode(cm, &buf); err != nil {
				t.Error(err)
			}
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(buf.Bytes())
		case r.Method == http.MethodPut:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonConflict, Code: 409})
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"ns","name":"p","resourceVersion":"43"}}`)
		}
	}))
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(TrackWrites(&rest.Config{Host: srv.URL}))
	rec := &recorded{}
	ctx := handling.With(context.Background(), handling.Info{Key: "ns/parent", Writes: rec})

	created, err := client.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "child-"}}, metav1.CreateOptions{})
	if err != nil || created.Name != "child-x1" || created.ResourceVersion != "42" || len(created.ManagedFields) != 1 {
		t.Fatalf("the client read %+v, %v: the transport must leave the answer as it was", created, err)
	}
	if err := client.CoreV1().Pods("ns").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.UpdateOptions{}); err == nil {
		t.Fatal("the conflict was not returned")
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Patch(ctx, "p", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Patch(context.Background(), "p", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Patch(ctx, "p", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []handling.Write{
		{Resource: "configmaps", Namespace: "ns", Name: "child-x1", Labels: map[string]string{"role": "child"}, ResourceVersion: "42"},
		{Resource: "configmaps", Namespace: "ns", Name: "p", ResourceVersion: "43"},
	}
	if len(rec.writes) != len(want) {
		t.Fatalf("recorded %+v, want %+v: the create (protobuf) and the last patch (JSON); not the eviction (a Status), the conflict, the dry run or the write outside a handling", rec.writes, want)
	}
	for i := range want {
		if got := rec.writes[i]; got.Resource != want[i].Resource || got.Namespace != want[i].Namespace || got.Name != want[i].Name ||
			got.ResourceVersion != want[i].ResourceVersion || len(got.Labels) != len(want[i].Labels) {
			t.Errorf("write %d: %+v, want %+v", i, got, want[i])
		}
	}
}

// fakeStore is a store that has seen the version rv.
type fakeStore struct{ rv atomic.Value }

func (s *fakeStore) LastStoreSyncResourceVersion() string { v, _ := s.rv.Load().(string); return v }

// writesWith returns a writes whose one cache (listing configmaps) has
// seen store's version.
func writesWith(clk *clocktesting.FakeClock, store *fakeStore) *writes {
	t := newWrites(clk)
	v := t.view()
	v.store = store
	v.learn(&url.URL{Path: "/api/v1/configmaps"})
	return t
}

func TestAKeyWaitsUntilItsCachesHaveSeenItsWrites(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := &fakeStore{}
	store.rv.Store("10")
	w := writesWith(clk, store)
	requeued := &counter{}
	requeue := requeued
	first := reasons(reasonChanged)

	if out, _, why := w.check("ns/a", first, requeue); out != writesNone || why.Len() != 1 {
		t.Fatalf("a key that wrote nothing: %v, %v; want handled at once with its reason", out, why.Strings())
	}
	w.Wrote("ns/a", handling.Write{Resource: "configmaps", Namespace: "ns", Name: "child", ResourceVersion: "12"})
	w.Wrote("ns/a", handling.Write{Resource: "secrets", Namespace: "ns", Name: "s", ResourceVersion: "99"}) // no cache lists it
	if out, _, _ := w.check("ns/a", first, requeue); out != writesHold {
		t.Fatalf("a key whose cache has seen 10 of its write 12: %v, want held", out)
	}
	clk.Step(writeWaitPoll)
	if requeued.Load() != 1 {
		t.Fatalf("requeued %d times after the first poll, want once", requeued.Load())
	}
	// Taken again before the cache caught up: held again, polled later.
	if out, _, _ := w.check("ns/a", handling.Reasons{}, requeue); out != writesHold {
		t.Fatalf("a key whose cache still lags: %v, want held", out)
	}
	clk.Step(writeWaitPoll)
	if requeued.Load() != 1 {
		t.Fatalf("requeued %d times before the second, doubled, poll; want once", requeued.Load())
	}
	store.rv.Store("12")
	clk.Step(writeWaitPoll)
	if requeued.Load() != 2 {
		t.Fatalf("requeued %d times after the second poll, want twice", requeued.Load())
	}
	out, waited, why := w.check("ns/a", reasons(handling.Reason{Why: "owned", Detail: "ConfigMap ns/child"}), requeue)
	if out != writesSeen || waited != 3*writeWaitPoll || why.Len() != 2 {
		t.Fatalf("after the cache caught up: %v after %s, reasons %v; want seen after %s, with the reasons of both times it was taken", out, waited, why.Strings(), 3*writeWaitPoll)
	}
	_, pending := w.pending["ns/a"]
	if out, _, _ := w.check("ns/a", first, requeue); out != writesNone || pending {
		t.Fatalf("the next handling: %v, pending %t; want nothing pending", out, pending)
	}
}

func TestAKeyWhoseCachesNeverCatchUpIsHandledAfterTheBound(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := &fakeStore{}
	store.rv.Store("10")
	w := writesWith(clk, store)
	requeued := &counter{}
	requeue := requeued
	w.Wrote("a", handling.Write{Resource: "configmaps", Name: "a", ResourceVersion: "11"})
	// Each poll queues the key; the worker that takes it holds it again,
	// until the bound.
	out, waited, _ := w.check("a", reasons(reasonChanged), requeue)
	for i := 0; out == writesHold; i++ {
		if i == 100 {
			t.Fatal("still held 100s after its write")
		}
		clk.Step(time.Second)
		out, waited, _ = w.check("a", handling.Reasons{}, requeue)
	}
	if out != writesTimedOut || waited != writeWaitBound {
		t.Fatalf("%v after %s, want timed out after %s", out, waited, writeWaitBound)
	}
	if n := requeued.Load(); n != int32(writeWaitBound/time.Second) {
		t.Errorf("requeued %d times, want %d: once a second", n, writeWaitBound/time.Second)
	}
	if w.n.Load() != 0 {
		t.Fatal("a key handled after the bound is still pending")
	}
}

func TestAGoneKeyAndAStoppedControllerLeaveNoWaitBehind(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := &fakeStore{}
	store.rv.Store("10")
	w := writesWith(clk, store)
	requeued := &counter{}
	requeue := requeued
	for _, key := range []string{"gone", "held"} {
		w.Wrote(key, handling.Write{Resource: "configmaps", Name: key, ResourceVersion: "11"})
		if out, _, _ := w.check(key, reasons(reasonChanged), requeue); out != writesHold {
			t.Fatalf("%s: %v, want held", key, out)
		}
	}
	w.forget("gone")
	w.stop()
	store.rv.Store("11")
	clk.Step(time.Minute)
	if requeued.Load() != 0 || clk.HasWaiters() {
		t.Fatalf("requeued %d times, timers left %t, after forget and stop; want none", requeued.Load(), clk.HasWaiters())
	}
	if w.n.Load() != 1 {
		t.Fatalf("%d keys pending, want the held one", w.n.Load())
	}
}

func TestAWriteOfTheControllersOwnKindIsRecordedAgainstItsKeyToo(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := &fakeStore{}
	store.rv.Store("10")
	w := writesWith(clk, store) // the controller's own cache: configmaps
	w.Wrote("ns/a", handling.Write{Resource: "configmaps", Namespace: "ns", Name: "b", ResourceVersion: "11"})
	for _, key := range []string{"ns/a", "ns/b"} {
		if out, _, _ := w.check(key, reasons(reasonChanged), &counter{}); out != writesHold {
			t.Errorf("%s: %v, want held", key, out)
		}
	}
	w.stop()
}

// The older of two versions of one cache is not waited for.
func TestALaterWriteReplacesAnEarlierOne(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := &fakeStore{}
	store.rv.Store("12")
	w := writesWith(clk, store)
	w.Wrote("a", handling.Write{Resource: "configmaps", Name: "a", ResourceVersion: "13"})
	w.Wrote("a", handling.Write{Resource: "configmaps", Name: "a", ResourceVersion: "11"})
	if out, _, _ := w.check("a", reasons(reasonChanged), &counter{}); out != writesHold {
		t.Fatalf("%v, want held for 13", out)
	}
	store.rv.Store("13")
	if out, _, _ := w.check("a", reasons(reasonChanged), &counter{}); out != writesSeen {
		t.Fatalf("%v, want seen", out)
	}
}

// counter is an adder counting its adds.
type counter struct{ atomic.Int32 }

func (c *counter) Add(string) { c.Int32.Add(1) }
