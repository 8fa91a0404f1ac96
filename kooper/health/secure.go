package health

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/logkey"
	"github.com/kooperkit/kooper/kooper/log"
)

// SecureMetrics serves /metrics over HTTPS, only to clients that the API
// server authenticates (a TokenReview of their bearer token) and
// authorizes (a SubjectAccessReview: verb get on the non-resource URL
// /metrics), as kubebuilder projects do with controller-runtime's
// WithAuthenticationAndAuthorization. A Prometheus ServiceAccount needs a
// ClusterRole with
//
//	rules:
//	  - nonResourceURLs: ["/metrics"]
//	    verbs: ["get"]
//
// and the operator's own ServiceAccount needs to create TokenReviews and
// SubjectAccessReviews (the built-in ClusterRole system:auth-delegator).
// Answers: 401 without a valid token, 403 without the permission, 500 if
// the API server cannot be asked, 503 while 4 reviews are already under
// way.
//
// Anyone who reaches the address can send tokens, each costing a
// TokenReview, so what they can make it spend is bounded whoever they are:
// 4 reviews at once, the others answered 503 at once without one; 5s per
// review; a log line per failure and 10s, counting those held back, not one
// per request. Decisions are kept for a minute, so that a scrape every few
// seconds costs no review, those about tokens the API server did not
// authenticate apart, so that a flood of made-up tokens
// never pushes a scraper's decision out. Give TokenReviews and
// SubjectAccessReviews a clientset of their own (built from a rest.Config
// whose RateLimiter is nil, with QPS and Burst of their own): its rate
// limiter then bounds the API requests a flood costs, and no other client
// of the operator, such as leader election's, waits behind them.
type SecureMetrics struct {
	// Addr is the HTTPS address, e.g. ":8443". Required.
	Addr string
	// TokenReviews authenticates the bearer tokens, e.g.
	// clientset.AuthenticationV1() of a clientset of their own. Required.
	TokenReviews authenticationv1client.TokenReviewsGetter
	// SubjectAccessReviews authorizes the users, e.g.
	// clientset.AuthorizationV1() of the same clientset. Required.
	SubjectAccessReviews authorizationv1client.SubjectAccessReviewsGetter
	// TLS is the server's TLS configuration. Default: a self-signed
	// certificate made at start for the host name, localhost and
	// 127.0.0.1 (Prometheus then scrapes with insecure_skip_verify, the
	// usual setting for in-cluster operator metrics).
	TLS *tls.Config
}

// The bounds of SecureMetrics' documentation.
const (
	// maxReviews is how many reviews run at once; beyond it a request that
	// needs one is answered 503 at once.
	maxReviews = 4
	// reviewTimeout bounds a review, its TokenReview and its
	// SubjectAccessReview together, within Prometheus's default scrape
	// timeout (10s).
	reviewTimeout = 5 * time.Second
	// logInterval is the least time between two log lines about the same
	// failure.
	logInterval = 10 * time.Second
	// cacheTTL is how long a decision about one token is kept.
	cacheTTL = time.Minute
	// maxCached bounds each cache of decisions: past it, that cache starts
	// empty again.
	maxCached = 1024
)

// authorizer checks a request's bearer token with the API server and
// remembers the answer for a while.
type authorizer struct {
	cfg   SecureMetrics
	log   log.Logger
	clock clock.PassiveClock
	// slots holds a token per review under way, at most maxReviews.
	slots chan struct{}
	// busy and failed throttle the log lines about refused and failed
	// reviews.
	busy, failed *throttle

	mu sync.Mutex
	// authenticated keeps the decisions about tokens the API server
	// authenticated (200 or 403), unauthenticated those about the others
	// (401): made-up tokens fill the second only.
	authenticated, unauthenticated map[[32]byte]decision
}

// decision is what the API server said about one token.
type decision struct {
	status  int // http.StatusOK, 401 or 403
	message string
	until   time.Time
}

func newAuthorizer(cfg SecureMetrics, logger log.Logger, clk clock.PassiveClock) *authorizer {
	return &authorizer{
		cfg: cfg, log: logger, clock: clk,
		slots:           make(chan struct{}, maxReviews),
		busy:            &throttle{clock: clk},
		failed:          &throttle{clock: clk},
		authenticated:   map[[32]byte]decision{},
		unauthenticated: map[[32]byte]decision{},
	}
}

func (a *authorizer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		key := sha256.Sum256([]byte(r.URL.Path + "\x00" + token))
		d, ok := a.cached(key)
		if !ok {
			select {
			case a.slots <- struct{}{}:
			default:
				a.busy.log(a.log.Warn, "too many metrics reviews at once, refusing", "limit", maxReviews)
				http.Error(w, "Service Unavailable: too many reviews at once; try again later", http.StatusServiceUnavailable)
				return
			}
			var err error
			d, err = a.review(r.Context(), token, r.URL.Path)
			<-a.slots
			if err != nil {
				a.failed.log(a.log.Warn, "could not review a metrics request", logkey.Err, err)
				http.Error(w, "Internal Server Error: could not review the request", http.StatusInternalServerError)
				return
			}
			a.keep(key, d)
		}
		if d.status != http.StatusOK {
			http.Error(w, d.message, d.status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cached returns the decision kept under key, if it has not expired.
func (a *authorizer) cached(key [32]byte) (decision, bool) {
	now := a.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, cache := range []map[[32]byte]decision{a.authenticated, a.unauthenticated} {
		if d, ok := cache[key]; ok && now.Before(d.until) {
			return d, true
		}
	}
	return decision{}, false
}

// keep remembers d under key until d.until.
func (a *authorizer) keep(key [32]byte, d decision) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cache := &a.authenticated
	if d.status == http.StatusUnauthorized {
		cache = &a.unauthenticated
	}
	if len(*cache) >= maxCached {
		*cache = map[[32]byte]decision{}
	}
	(*cache)[key] = d
}

// review asks the API server about token on path: a TokenReview, then a
// SubjectAccessReview, within reviewTimeout.
func (a *authorizer) review(ctx context.Context, token, path string) (decision, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := a.cfg.TokenReviews.TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("token review: %w", err)
	}
	d := decision{status: http.StatusOK, until: a.clock.Now().Add(cacheTTL)}
	if !tr.Status.Authenticated {
		d.status, d.message = http.StatusUnauthorized, "Unauthorized: the token is not valid"
		return d, nil
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.cfg.SubjectAccessReviews.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("subject access review: %w", err)
	}
	if !sar.Status.Allowed {
		d.status = http.StatusForbidden
		d.message = fmt.Sprintf("Forbidden: user %q may not get %s", u.Username, path)
	}
	return d, nil
}

// throttle lets one log line through per logInterval, and counts the lines
// it holds back in between, which the next line reports as "suppressed".
type throttle struct {
	clock clock.PassiveClock

	mu         sync.Mutex
	next       time.Time
	suppressed int
}

// log writes msg with kv through write (a Logger's Warn, say), adding
// "suppressed", unless a line went through less than logInterval ago: then
// it only counts it.
func (t *throttle) log(write func(msg string, kv ...any), msg string, kv ...any) {
	t.mu.Lock()
	now := t.clock.Now()
	if now.Before(t.next) {
		t.suppressed++
		t.mu.Unlock()
		return
	}
	suppressed := t.suppressed
	t.next, t.suppressed = now.Add(logInterval), 0
	t.mu.Unlock()
	write(msg, append(kv[:len(kv):len(kv)], "suppressed", suppressed)...)
}

// startSecure serves h (the metrics) on cfg.Addr over TLS, behind the
// authorizer.
func startSecure(cfg SecureMetrics, h http.Handler, logger log.Logger, lim serverLimits, clk clock.PassiveClock) (*Server, error) {
	switch {
	case cfg.Addr == "":
		return nil, errors.New("health: secure metrics need an address")
	case cfg.TokenReviews == nil || cfg.SubjectAccessReviews == nil:
		return nil, errors.New("health: secure metrics need clients for TokenReviews and SubjectAccessReviews")
	}
	tlsCfg := cfg.TLS
	if tlsCfg == nil {
		cert, err := selfSigned()
		if err != nil {
			return nil, err
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	a := newAuthorizer(cfg, logger, clk)
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.wrap(h))
	return listen(cfg.Addr, tlsCfg, mux, logger, lim)
}

// selfSigned makes a certificate for the host name, localhost and
// 127.0.0.1, valid for a year.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("could not make a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("could not make a serial number: %w", err)
	}
	host, _ := os.Hostname()
	names := []string{"localhost"}
	if host != "" {
		names = append(names, host)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "kooper metrics"},
		DNSNames:     names,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("could not make a certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
