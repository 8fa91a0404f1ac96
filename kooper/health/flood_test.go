package health_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/health"
	"github.com/kooperkit/kooper/kooper/log"
)

// tokenReviews is a TokenReviewsGetter answering with create.
type tokenReviews func(ctx context.Context, token string) (*authenticationv1.TokenReview, error)

func (f tokenReviews) TokenReviews() authenticationv1client.TokenReviewInterface { return f }

func (f tokenReviews) Create(ctx context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	return f(ctx, tr.Spec.Token)
}

// valid authenticates the token "prometheus" only.
func valid(_ context.Context, token string) (*authenticationv1.TokenReview, error) {
	return &authenticationv1.TokenReview{Status: authenticationv1.TokenReviewStatus{
		Authenticated: token == "prometheus",
		User:          authenticationv1.UserInfo{Username: "prometheus"},
	}}, nil
}

// startSecure serves secure metrics reviewed by tr (and a fake
// SubjectAccessReview allowing everyone), logging to logs.
func startSecure(t *testing.T, tr tokenReviews, logs io.Writer) string {
	t.Helper()
	return startSecureWithClock(t, tr, logs, nil)
}

// startSecureWithClock is startSecure with the decisions and held-back log
// lines timed by clk (nil: the real clock).
func startSecureWithClock(t *testing.T, tr tokenReviews, logs io.Writer, clk clock.PassiveClock) string {
	t.Helper()
	client := fake.NewClientset()
	client.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
	})
	srv, err := health.StartWithClock(health.Config{
		Addr: "127.0.0.1:0", Gatherer: prom.NewRegistry(),
		SecureMetrics: &health.SecureMetrics{Addr: "127.0.0.1:0", TokenReviews: tr, SubjectAccessReviews: client.AuthorizationV1()},
		Logger:        log.NewStd(logs, log.StdOptions{DisableTime: true}),
	}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return "https://" + srv.SecureAddr() + "/metrics"
}

var insecure = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the self-signed default

// scrape returns the status of a GET of url with token.
func scrape(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := insecure.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Beyond 4 reviews at once, a request whose token needs a review is
// answered 503 at once, without one; a decision already kept is still
// served. Each review has a deadline (5s), and the refusals are logged
// once per interval.
func TestSecureMetricsRefuseReviewsBeyondTheLimitAtOnce(t *testing.T) {
	const limit = 4
	entered, release := make(chan struct{}), make(chan struct{})
	var reviews atomic.Int32
	logs := &lockedBuffer{}
	url := startSecureWithClock(t, func(ctx context.Context, token string) (*authenticationv1.TokenReview, error) {
		reviews.Add(1)
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > 5*time.Second {
			t.Errorf("got a review with deadline %v (set: %v), want at most 5s away", d, ok)
		}
		if token != "prometheus" {
			entered <- struct{}{}
			<-release
		}
		return valid(ctx, token)
	}, logs, clocktesting.NewFakePassiveClock(time.Now()))
	if got := scrape(t, url, "prometheus"); got != http.StatusOK {
		t.Fatalf("got %d for prometheus's first scrape, want 200", got)
	}

	var inFlight sync.WaitGroup
	for i := range limit {
		inFlight.Go(func() {
			if got := scrape(t, url, fmt.Sprintf("made-up-%d", i)); got != http.StatusUnauthorized {
				t.Errorf("got %d for a made-up token within the limit, want 401", got)
			}
		})
		<-entered
	}
	const beyond = 5
	for i := range beyond {
		answered := make(chan int, 1)
		inFlight.Go(func() { answered <- scrape(t, url, fmt.Sprintf("beyond-%d", i)) })
		select {
		case got := <-answered:
			if got != http.StatusServiceUnavailable {
				t.Errorf("got %d for a made-up token beyond the limit, want 503", got)
			}
		case <-entered:
			t.Error("a token beyond the limit was reviewed")
		}
	}
	if got := scrape(t, url, "prometheus"); got != http.StatusOK {
		t.Errorf("got %d for prometheus's kept decision while the reviews are at their limit, want 200", got)
	}
	close(release)
	inFlight.Wait()
	if got := reviews.Load(); got != 1+limit {
		t.Errorf("got %d TokenReviews, want %d: prometheus's, and those within the limit", got, 1+limit)
	}
	if got := strings.Count(logs.String(), "too many metrics reviews at once, refusing"); got != 1 {
		t.Errorf("got %d log lines about %d refusals, want 1:\n%s", got, beyond, logs)
	}
}

// A scraper's decision is kept through a flood of made-up tokens, more
// than the cache holds: the flood never costs it a review.
func TestSecureMetricsKeepAScrapersDecisionThroughAFloodOfMadeUpTokens(t *testing.T) {
	var prometheus, madeUp atomic.Int32
	url := startSecure(t, func(ctx context.Context, token string) (*authenticationv1.TokenReview, error) {
		if token == "prometheus" {
			prometheus.Add(1)
		} else {
			madeUp.Add(1)
		}
		return valid(ctx, token)
	}, io.Discard)
	if got := scrape(t, url, "prometheus"); got != http.StatusOK {
		t.Fatalf("got %d, want 200", got)
	}
	const flood = 2000
	for i := range flood {
		if got := scrape(t, url, fmt.Sprintf("made-up-%d", i)); got != http.StatusUnauthorized {
			t.Fatalf("got %d for a made-up token, want 401", got)
		}
	}
	if got := scrape(t, url, "prometheus"); got != http.StatusOK {
		t.Fatalf("got %d, want 200", got)
	}
	if got := prometheus.Load(); got != 1 {
		t.Errorf("got %d TokenReviews of prometheus's token across a flood of %d made-up ones, want 1", got, flood)
	}
	if got := madeUp.Load(); got != flood {
		t.Errorf("got %d TokenReviews of made-up tokens, want %d", got, flood)
	}
}

// Reviews failing on every request (the API server unreachable, the
// client's rate limiter exhausted) write one line per interval with the
// number held back, not one line per request.
func TestSecureMetricsLogFailedReviewsOncePerInterval(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	logs := &lockedBuffer{}
	url := startSecureWithClock(t, func(context.Context, string) (*authenticationv1.TokenReview, error) {
		return nil, errors.New("client rate limiter Wait returned an error")
	}, logs, clk)
	for i := range 50 {
		if got := scrape(t, url, fmt.Sprintf("made-up-%d", i)); got != http.StatusInternalServerError {
			t.Fatalf("got %d, want 500", got)
		}
	}
	clk.SetTime(clk.Now().Add(10 * time.Second))
	scrape(t, url, "one-more")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "suppressed=0") || !strings.Contains(lines[1], "suppressed=49") {
		t.Errorf("got log lines\n%s\nwant 2: the first failure, then one counting the 49 held back", logs)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
