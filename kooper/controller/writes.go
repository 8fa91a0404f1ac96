package controller

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/handling"
)

// Read your own writes.
//
// A handler writes (creates a child, updates its object's status) and
// returns; the write's own event queues the key again, and the key may
// come out of the queue before the cache holds the write: a watch delivers
// it a moment later. Handled then, the key would act on the state from
// before its own write: create a second child with generateName, or flip
// a condition back. So a controller holds a key until its caches have
// seen what the key's handlings wrote.
//
// How: a client made from [TrackWrites]'s config tells the controller of
// each write a handler makes with it (the request's context is the
// handling's) the resource written and the resourceVersion the API server
// answered. The same client's lists and watches tell each of the
// controller's caches what it lists: resource, namespace, label selector.
// Every version is recorded against the key handled, and against the
// written object's own key if the controller's own cache lists it. Before
// a worker hands a key to the handler (stage 1 of process, handle.go), it
// compares each version recorded against the key with what the cache that
// lists the written object has seen (client-go's
// cache.Store.LastStoreSyncResourceVersion, compared by apimachinery's
// resourceversion.CompareResourceVersion). A key a cache lags behind
// waits out of the queue, its reasons kept, and comes back when an event
// queues it (the write's own, typically) or after a poll (writeWaitPoll,
// doubling up to a second), to be checked again; after writeWaitBound it
// is handled anyway, and the log and MetricsRecorder.ObserveCacheWait say
// so. It is never dropped.
//
// What it does not promise: writes by anyone else (another controller, a
// user, this controller's other keys' handlings) are seen when the watch
// delivers them, as before; a write the caches can never see (an object
// the label selector does not match once written: a field selector is
// only checked on metadata.name and metadata.namespace) holds its key
// until a bookmark moves the cache past it, or the bound; answers in
// neither JSON nor Kubernetes' protobuf (CBOR, an alpha) are not read; a
// store that reports no version (client-go's AtomicFIFO feature off)
// holds nothing.

const (
	// writeWaitBound is how long a key waits for its caches: then it is
	// handled anyway.
	writeWaitBound = 10 * time.Second
	// writeWaitPoll is the first delay before a held key's caches are
	// checked again; it doubles up to a second.
	writeWaitPoll = 10 * time.Millisecond
)

// TrackWrites returns a copy of cfg whose clients tell the controllers
// what their handlers write, so that a key is not handled again before
// the controller's caches have seen its handler's own writes (a key waits
// for that at most ten seconds). Build with it the clients a handler
// writes with, and those its Retrievers list and watch with: the same
// config serves both. Writes outside a handling, lists and watches of
// anything but a controller's caches, and calls of clients built from
// another config are passed on untouched.
func TrackWrites(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return writeTracker{next: next} })
	return cfg
}

// writeTracker is TrackWrites's transport.
type writeTracker struct{ next http.RoundTripper }

// viewKey is the context key of the cache a list or watch fills.
type viewKey struct{}

func (t writeTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Method == http.MethodGet {
		if v, ok := ctx.Value(viewKey{}).(*cacheView); ok {
			v.learn(req.URL)
		}
		return t.next.RoundTrip(req)
	}
	info, ok := handling.From(ctx)
	if !ok || info.Writes == nil || !isWrite(req.Method) || req.URL.Query().Has("dryRun") {
		return t.next.RoundTrip(req)
	}
	res, err := t.next.RoundTrip(req)
	if err != nil || res.StatusCode < 200 || res.StatusCode > 299 {
		return res, err
	}
	p, ok := parsePath(req.URL.Path)
	if !ok {
		return res, nil
	}
	if w, ok := readWrite(res); ok {
		w.Group, w.Resource = p.group, p.resource
		info.Writes.Wrote(info.Key, w)
	}
	return res, nil
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// readWrite reads what a successful write answered: the object's
// namespace, name, labels and resourceVersion. It leaves res's body as
// the client will read it. False for an answer that is not an object with
// a resourceVersion (a Status, say: an eviction's), or in neither JSON
// (custom resources, metadata and dynamic clients) nor Kubernetes'
// protobuf (the typed clients of built-in kinds).
func readWrite(res *http.Response) (handling.Write, bool) {
	if res.Body == nil {
		return handling.Write{}, false
	}
	ct, _, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if err != nil || (ct != "application/json" && ct != "application/vnd.kubernetes.protobuf") {
		return handling.Write{}, false
	}
	b, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		// The client sees what was read, then the error.
		res.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
		return handling.Write{}, false
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	if ct == "application/json" {
		return readJSON(b)
	}
	return readProtobuf(b)
}

func readJSON(b []byte) (handling.Write, bool) {
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Namespace       string            `json:"namespace"`
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Labels          map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &obj) != nil || obj.Kind == "Status" || obj.Metadata.ResourceVersion == "" {
		return handling.Write{}, false
	}
	m := obj.Metadata
	return handling.Write{Namespace: m.Namespace, Name: m.Name, Labels: m.Labels, ResourceVersion: m.ResourceVersion}, true
}

// protobufPrefix starts every object apimachinery's protobuf serializer
// writes: a runtime.Unknown follows, whose Raw is the object.
var protobufPrefix = []byte{'k', '8', 's', 0}

// readProtobuf reads an answer of apimachinery's protobuf serializer. The
// object's metadata is field 1 of every Kubernetes kind's message (the
// convention of go-to-protobuf, which generates them all).
func readProtobuf(b []byte) (handling.Write, bool) {
	var u runtime.Unknown
	if !bytes.HasPrefix(b, protobufPrefix) || u.Unmarshal(b[len(protobufPrefix):]) != nil || u.Kind == "Status" {
		return handling.Write{}, false
	}
	field, ok := protobufField(u.Raw, 1)
	var m metav1.ObjectMeta
	if !ok || m.Unmarshal(field) != nil || m.ResourceVersion == "" {
		return handling.Write{}, false
	}
	return handling.Write{Namespace: m.Namespace, Name: m.Name, Labels: m.Labels, ResourceVersion: m.ResourceVersion}, true
}

// protobufField returns the bytes of field num of the protobuf message b.
func protobufField(b []byte, num protowire.Number) ([]byte, bool) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			return v, l >= 0
		}
		if l = protowire.ConsumeFieldValue(n, typ, b); l < 0 {
			return nil, false
		}
		b = b[l:]
	}
	return nil, false
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// apiPath is what a request's path names.
type apiPath struct {
	group, resource, namespace string
}

// parsePath reads the resource and namespace from an API path:
// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]], or the same under
// /apis/GROUP/VERSION. A namespace's own subresources
// (/api/v1/namespaces/NAME/status, /finalize) are the namespace's.
func parsePath(path string) (apiPath, bool) {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	var p apiPath
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		seg = seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		p.group, seg = seg[1], seg[3:]
	default:
		return apiPath{}, false
	}
	namespaceOwn := p.group == "" && len(seg) == 3 && (seg[2] == "status" || seg[2] == "finalize")
	if len(seg) >= 3 && seg[0] == "namespaces" && !namespaceOwn {
		p.namespace, seg = seg[1], seg[2:]
	}
	p.resource = seg[0]
	return p, p.resource != ""
}

// cacheView is what the controller knows of one of its caches: what it
// lists, learned from its lists and watches, and the version it has seen.
type cacheView struct {
	lists atomic.Pointer[listed]
	// store is the cache's store, set before its informer starts.
	store interface{ LastStoreSyncResourceVersion() string }
}

// listed is what a cache lists.
type listed struct {
	path   apiPath
	labels labels.Selector
	fields fields.Selector
}

// learn records what a list or watch of v's cache asks for.
func (v *cacheView) learn(u *url.URL) {
	p, ok := parsePath(u.Path)
	if !ok {
		return
	}
	q := u.Query()
	l := &listed{path: p, labels: labels.Everything(), fields: fields.Everything()}
	if s, err := labels.Parse(q.Get("labelSelector")); err == nil {
		l.labels = s
	}
	if s, err := fields.ParseSelector(q.Get("fieldSelector")); err == nil {
		l.fields = s
	}
	v.lists.Store(l)
}

// sees reports whether v's cache lists the object w wrote.
func (v *cacheView) sees(w handling.Write) bool {
	l := v.lists.Load()
	if l == nil || l.path.group != w.Group || l.path.resource != w.Resource {
		return false
	}
	if l.path.namespace != "" && l.path.namespace != w.Namespace {
		return false
	}
	if !l.labels.Matches(labels.Set(w.Labels)) {
		return false
	}
	for _, r := range l.fields.Requirements() {
		var got string
		switch r.Field {
		case "metadata.name":
			got = w.Name
		case "metadata.namespace":
			got = w.Namespace
		default:
			continue // cannot tell: assume it matches
		}
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals:
			if got != r.Value {
				return false
			}
		case selection.NotEquals:
			if got == r.Value {
				return false
			}
		}
	}
	return true
}

// seen reports whether v's cache has seen version rv. A version it cannot
// compare (none reported, or not a number) counts as seen: nothing waits
// on what cannot be known.
func (v *cacheView) seen(rv string) bool {
	if v.store == nil {
		return true
	}
	cur := v.store.LastStoreSyncResourceVersion()
	if cur == "" {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(cur, rv)
	return err != nil || c >= 0
}

// writes is a controller's record of its handlers' writes, per key, for
// the worker that takes the key next. Safe for concurrent use.
type writes struct {
	clock clock.WithDelayedExecution
	// views are the caches: the controller's own first, then its
	// sources'. Set before the workers start.
	mu      sync.Mutex
	views   []*cacheView
	pending map[string]*pendingWrites
	n       atomic.Int64 // len(pending), read without mu
}

// pendingWrites is what a key's handlings wrote that the caches have not
// all been seen to hold.
type pendingWrites struct {
	versions map[*cacheView]string
	// Once the key was held: since when, the reasons it was queued for,
	// and its next check.
	since time.Time
	held  handling.Reasons
	poll  time.Duration
	timer clock.Timer
}

func newWrites(clk clock.WithDelayedExecution) *writes {
	return &writes{clock: clk, pending: map[string]*pendingWrites{}}
}

// view returns a new cache's view; the first is the controller's own.
func (t *writes) view() *cacheView {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := &cacheView{}
	t.views = append(t.views, v)
	return v
}

var _ handling.Writes = (*writes)(nil)

// Wrote records that key's handling wrote w.
func (t *writes) Wrote(key string, w handling.Write) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, v := range t.views {
		if !v.sees(w) {
			continue
		}
		t.record(key, v, w.ResourceVersion)
		if own := writtenKey(w); i == 0 && own != key {
			t.record(own, v, w.ResourceVersion)
		}
	}
}

// record keeps rv, unless a later version is recorded, as the version v's
// cache must see before key is handled. With t.mu held.
func (t *writes) record(key string, v *cacheView, rv string) {
	p, ok := t.pending[key]
	if !ok {
		p = &pendingWrites{versions: map[*cacheView]string{}}
		t.pending[key] = p
		t.n.Add(1)
	}
	if old, ok := p.versions[v]; ok {
		if c, err := resourceversion.CompareResourceVersion(old, rv); err != nil || c >= 0 {
			return
		}
	}
	p.versions[v] = rv
}

// writtenKey is the key of the object w wrote.
func writtenKey(w handling.Write) string {
	if w.Namespace == "" {
		return w.Name
	}
	return w.Namespace + "/" + w.Name
}

// adder is where a held key goes back: the controller's workqueue.
type adder interface{ Add(key string) }

// writesOutcome is what check found.
type writesOutcome int8

const (
	// writesNone: nothing of the key's writes is pending.
	writesNone writesOutcome = iota
	// writesHold: the caches lag; the key waits.
	writesHold
	// writesSeen: the key waited, and its caches caught up.
	writesSeen
	// writesTimedOut: the key waited writeWaitBound, and is handled anyway.
	writesTimedOut
)

// check says whether key, taken from the queue for why, may be handled: its
// outcome, how long it waited (writesSeen, writesTimedOut) and why it was
// queued, with the reasons of the times it was held. On writesHold the key
// is out of the queue: it is added to q again after a poll, to be checked
// again.
func (t *writes) check(key string, why handling.Reasons, q adder) (writesOutcome, time.Duration, handling.Reasons) {
	if t.n.Load() == 0 {
		return writesNone, 0, why
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pending[key]
	if !ok {
		return writesNone, 0, why
	}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	for _, r := range why.All() {
		p.held.Add(r)
	}
	if t.caughtUp(p) {
		t.drop(key)
		if p.since.IsZero() {
			return writesNone, 0, p.held
		}
		return writesSeen, t.clock.Since(p.since), p.held
	}
	if p.since.IsZero() {
		p.since, p.poll = t.clock.Now(), writeWaitPoll
	}
	waited := t.clock.Since(p.since)
	if waited >= writeWaitBound {
		t.drop(key)
		return writesTimedOut, waited, p.held
	}
	t.wait(key, p, waited, q)
	return writesHold, waited, p.held
}

// wait queues key again after p.poll (doubling each time, up to a
// second), or when the bound passes if sooner: the worker that takes it
// checks again. With t.mu held. The timer's function reads no clock: a
// fake clock runs it with its own lock held.
func (t *writes) wait(key string, p *pendingWrites, waited time.Duration, q adder) {
	d := max(0, min(p.poll, writeWaitBound-waited))
	p.poll = min(2*p.poll, time.Second)
	p.timer = t.clock.AfterFunc(d, func() {
		t.mu.Lock()
		due := t.pending[key] == p && p.timer != nil
		p.timer = nil
		t.mu.Unlock()
		if due {
			q.Add(key)
		}
	})
}

// caughtUp reports whether every cache has seen what p waits for, and
// forgets what they have. With t.mu held.
func (t *writes) caughtUp(p *pendingWrites) bool {
	for v, rv := range p.versions {
		if v.seen(rv) {
			delete(p.versions, v)
		}
	}
	return len(p.versions) == 0
}

// drop forgets key's writes. With t.mu held.
func (t *writes) drop(key string) {
	if _, ok := t.pending[key]; ok {
		delete(t.pending, key)
		t.n.Add(-1)
	}
}

// forget forgets key's writes: its object is gone.
func (t *writes) forget(key string) {
	if t.n.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pending[key]; ok && p.timer != nil {
		p.timer.Stop()
	}
	t.drop(key)
}

// stop stops every held key's timer: Run is returning.
func (t *writes) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pending {
		if p.timer != nil {
			p.timer.Stop()
			p.timer = nil
		}
	}
}
