package child

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// requests counts the HTTP requests a child's clients make, by what they
// ask for: method (WATCH for watch=true), path, the query parameters that
// decide how a cache is filled, the media type asked for and the one
// served. It shows whether each implementation streams its initial list
// (sendInitialEvents=true, no LIST) and speaks protobuf.
type requests struct {
	mu sync.Mutex
	n  map[string]int
}

func newRequests() *requests { return &requests{n: map[string]int{}} }

// wrap is a rest.Config WrapTransport.
func (r *requests) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper{next: next, r: r}
}

// snapshot returns "count× request" lines, sorted.
func (r *requests) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := make([]string, 0, len(r.n))
	for k, n := range r.n {
		lines = append(lines, strconv.Itoa(n)+"× "+k)
	}
	slices.Sort(lines)
	return lines
}

type roundTripper struct {
	next http.RoundTripper
	r    *requests
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	served := "error"
	if err == nil {
		served = strconv.Itoa(resp.StatusCode) + " " + mediaType(resp.Header.Get("Content-Type"))
	}
	key := describe(req) + " -> " + served
	t.r.mu.Lock()
	t.r.n[key]++
	t.r.mu.Unlock()
	return resp, err
}

// describe renders a request without its varying parts (timeouts,
// resource versions and shard selectors; namespaces' names stay).
func describe(req *http.Request) string {
	q := req.URL.Query()
	method := req.Method
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		method = "WATCH"
	}
	var params []string
	for _, k := range []string{"sendInitialEvents", "allowWatchBookmarks", "resourceVersionMatch", "limit"} {
		if v := q.Get(k); v != "" {
			params = append(params, k+"="+v)
		}
	}
	for _, k := range []string{"resourceVersion", "shardSelector"} {
		if q.Get(k) != "" {
			params = append(params, k+"=…")
		}
	}
	s := method + " " + req.URL.Path
	if len(params) > 0 {
		s += "?" + strings.Join(params, "&")
	}
	return s + " accept=" + mediaType(req.Header.Get("Accept"))
}

// mediaType shortens the first media type of a header value:
// "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, ..."
// becomes "protobuf;as=PartialObjectMetadata".
func mediaType(v string) string {
	if v == "" {
		return "-"
	}
	first, _, _ := strings.Cut(v, ",")
	parts := strings.Split(strings.TrimSpace(first), ";")
	parts[0] = strings.TrimPrefix(strings.TrimPrefix(parts[0], "application/"), "vnd.kubernetes.")
	kept := parts[:1]
	for _, p := range parts[1:] {
		if strings.HasPrefix(p, "as=") || strings.HasPrefix(p, "stream=") {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ";")
}

// counts returns a copy of the counts so far, for since.
func (r *requests) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// since returns "count× request" lines of the requests made after before
// (a counts result), sorted.
func (r *requests) since(before map[string]int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	for k, n := range r.n {
		if d := n - before[k]; d > 0 {
			lines = append(lines, strconv.Itoa(d)+"× "+k)
		}
	}
	slices.Sort(lines)
	return lines
}
