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
// the API server cannot be asked.
type SecureMetrics struct {
	// Addr is the HTTPS address, e.g. ":8443". Required.
	Addr string
	// TokenReviews authenticates the bearer tokens, e.g.
	// clientset.AuthenticationV1(). Required.
	TokenReviews authenticationv1client.TokenReviewsGetter
	// SubjectAccessReviews authorizes the users, e.g.
	// clientset.AuthorizationV1(). Required.
	SubjectAccessReviews authorizationv1client.SubjectAccessReviewsGetter
	// TLS is the server's TLS configuration. Default: a self-signed
	// certificate made at start for the host name, localhost and
	// 127.0.0.1 (Prometheus then scrapes with insecure_skip_verify, the
	// usual setting for in-cluster operator metrics).
	TLS *tls.Config
	// CacheTTL is how long a decision about one token is kept, so that a
	// scrape every few seconds costs no review. Default 1 minute.
	CacheTTL time.Duration
}

// authorizer checks a request's bearer token with the API server and
// remembers the answer for a while.
type authorizer struct {
	cfg SecureMetrics
	log log.Logger

	mu    sync.Mutex
	cache map[[32]byte]decision
}

// decision is what the API server said about one token.
type decision struct {
	status  int // http.StatusOK, 401 or 403
	message string
	until   time.Time
}

// maxCached bounds the cache: past it, the cache starts empty again.
const maxCached = 1024

func (a *authorizer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		d, err := a.decide(r.Context(), token, r.URL.Path)
		if err != nil {
			a.log.Warn("could not review a metrics request", log.KeyErr, err)
			http.Error(w, "Internal Server Error: could not review the request", http.StatusInternalServerError)
			return
		}
		if d.status != http.StatusOK {
			http.Error(w, d.message, d.status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decide returns the decision for token on path, from the cache or from a
// TokenReview and a SubjectAccessReview.
func (a *authorizer) decide(ctx context.Context, token, path string) (decision, error) {
	key := sha256.Sum256([]byte(path + "\x00" + token))
	now := time.Now()
	a.mu.Lock()
	if d, ok := a.cache[key]; ok && now.Before(d.until) {
		a.mu.Unlock()
		return d, nil
	}
	a.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := a.cfg.TokenReviews.TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("token review: %w", err)
	}
	d := decision{status: http.StatusOK, until: now.Add(a.cfg.CacheTTL)}
	switch {
	case !tr.Status.Authenticated:
		d.status, d.message = http.StatusUnauthorized, "Unauthorized: the token is not valid"
	default:
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
	}
	a.mu.Lock()
	if len(a.cache) >= maxCached {
		a.cache = map[[32]byte]decision{}
	}
	a.cache[key] = d
	a.mu.Unlock()
	return d, nil
}

// startSecure serves h (the metrics) on cfg.Addr over TLS, behind the
// authorizer.
func startSecure(cfg SecureMetrics, h http.Handler, logger log.Logger) (*Server, error) {
	switch {
	case cfg.Addr == "":
		return nil, errors.New("health: secure metrics need an address")
	case cfg.TokenReviews == nil || cfg.SubjectAccessReviews == nil:
		return nil, errors.New("health: secure metrics need clients for TokenReviews and SubjectAccessReviews")
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = time.Minute
	}
	tlsCfg := cfg.TLS
	if tlsCfg == nil {
		cert, err := selfSigned()
		if err != nil {
			return nil, err
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	a := &authorizer{cfg: cfg, log: logger, cache: map[[32]byte]decision{}}
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.wrap(h))
	return ServeTLS(cfg.Addr, mux, tlsCfg, logger)
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
