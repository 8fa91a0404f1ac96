package integration_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// The flood: connections to each port, each sending again once answered,
// at full strength for longer than leader election's RenewDeadline and
// LeaseDuration together (10s and 15s): a renewal stuck behind the flood
// fails after RenewDeadline, and the replica stops leading RenewDeadline
// after its last renewal.
const (
	floodRamp = 3 * time.Second
	floodFor  = floodRamp + leaderelection.DefaultRenewDeadline + leaderelection.DefaultLeaseDuration
	// floodPause between a connection's answer and its next request keeps
	// the flood (sent from this process, which also runs the operator)
	// from taking the machine's CPU for itself: what is tested is the
	// operator's clients and limits, not how many cores the machine has.
	floodPause = 2 * time.Second
)

// floodConnections is how many connections flood each port: as many as
// the security review opened (600) on a machine of 6 cores or more, 100
// per core below. The flood is sent from the process that runs the
// operator, under the race detector: 600 connections per port on 2 cores,
// with the API server on the same cores, starved the process itself in 4
// of 9 runs (an answer to the API server late, or the Lease unrenewed: for
// want of CPU, not of a client or a slot). 100 per core is still far beyond the limits: 50 reviews a second
// per core against webhook.MaxReviews at once, and the test requires the
// 429s and 503s that show it.
var floodConnections = min(600, 100*goruntime.NumCPU())

// Anyone who reaches the webhook or the metrics port can send to it without
// credentials: AdmissionReviews in anyone's name, each costing up to
// 1+validation.MaxNamespaces SubjectAccessReviews, and bearer tokens the
// API server has to review. A flood of both, while a PodTerminator is
// created through the API server, costs the replica neither its Lease
// (leader election has a client and a rate limiter of its own: no flood
// request waits in front of a renewal) nor a timely answer: the API server
// hears from the webhook within its 5s timeout, allowed or refused (fail
// closed), never a timeout. The mechanism shows in the answers: the reviews
// and tokens beyond the limits are refused at once (429, 503) without a
// question to the API server, and the Lease is renewed throughout. The logs
// stay bounded: failures are counted, not written one line per request.
func TestAFloodAtTheWebhookAndMetricsPortsCostsNeitherTheLeaseNorTheAnswers(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	asAdmin := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()

	webhookAddr, httpAddr, secureAddr := e2etest.FreeAddr(t), e2etest.FreeAddr(t), e2etest.FreeAddr(t)
	registerWebhook(t, admin, webhookAddr)
	logs := &lineCounter{}
	reg := prom.NewRegistry()
	cfg := operator.Config{
		REST:              e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100),
		HTTPAddr:          httpAddr,
		SecureMetricsAddr: secureAddr,
		Registry:          reg,
		Webhook:           operator.Webhook{Addr: webhookAddr, Hosts: []string{"127.0.0.1"}},
		Logger:            log.NewStd(logs, log.StdOptions{}),
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- operator.Run(runCtx, cfg) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-stopped:
			if err != nil && !t.Failed() { // else reported already
				t.Errorf("the operator: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("the operator did not stop 20s after its context was cancelled")
		}
	})
	running := func() error {
		select {
		case err := <-stopped:
			stopped <- err // for the cleanup
			return fmt.Errorf("the operator stopped: %w", err)
		default:
			return nil
		}
	}
	leading := func() bool {
		return e2etest.Metric(t, reg, "kooper_controller_leader", map[string]string{"controller": operator.DefaultName}) == 1
	}
	e2etest.Eventually(t, 30*time.Second, "the replica leads", leading)
	waitFor(t, 30*time.Second, "the webhook admits the admin's PodTerminator", func() error {
		return tryCreate(ctx, asAdmin, "default")
	})

	leases := watchLease(t, admin)

	// region: flood
	floodCtx, endFlood := context.WithTimeout(ctx, floodFor)
	defer endFlood()
	var flooders sync.WaitGroup
	webhookAnswers, metricsAnswers := &answers{}, &answers{}
	insecure := &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a flood does not check whom it floods
		MaxIdleConnsPerHost: floodConnections,
	}}
	defer insecure.CloseIdleConnections()
	linesBefore := logs.restart()
	// Every connection has sent its first request once sent is done.
	var sent sync.WaitGroup
	for i := range floodConnections {
		flooders.Add(2)
		sent.Add(2)
		go func() {
			defer flooders.Done()
			review := floodReview(t, fmt.Sprintf("mallory-%d", i))
			flood(floodCtx, insecure, webhookAnswers, sent.Done, func() (*http.Request, error) {
				return http.NewRequestWithContext(floodCtx, http.MethodPost, "https://"+webhookAddr+webhook.Path, bytes.NewReader(review))
			})
		}()
		go func() {
			defer flooders.Done()
			flood(floodCtx, insecure, metricsAnswers, sent.Done, func() (*http.Request, error) {
				req, err := http.NewRequestWithContext(floodCtx, http.MethodGet, "https://"+secureAddr+"/metrics", nil)
				if err == nil {
					req.Header.Set("Authorization", "Bearer "+randomToken())
				}
				return req, err
			})
		}()
		// Connections opened over floodRamp, not all in the same
		// millisecond: 2×floodConnections TLS handshakes at once in this
		// process, under the race detector, would measure the machine's
		// cores.
		time.Sleep(floodRamp / time.Duration(floodConnections))
	}
	sent.Wait()
	fullStrength := time.Now()

	// While the flood lasts, the admin creates PodTerminators through the
	// API server, which calls the webhook with a 5s timeout (webhook.yaml):
	// each gets an answer from the webhook, allowed or refused, and none
	// fails because the webhook did not answer in time.
	var legit []string
	for floodCtx.Err() == nil {
		err := tryCreate(ctx, asAdmin, "default")
		switch {
		case err == nil:
			legit = append(legit, "admitted")
		case timedOut(err):
			t.Errorf("during the flood the API server got no answer from the webhook within its timeout: %v", err)
			legit = append(legit, "timed out")
		default:
			legit = append(legit, "refused: "+err.Error())
		}
		select {
		case <-floodCtx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	ended := time.Now()
	flooders.Wait()
	linesDuring := logs.count() - linesBefore
	// endregion: flood

	t.Logf("webhook answers to the flood: %s", webhookAnswers)
	t.Logf("metrics answers to the flood: %s", metricsAnswers)
	t.Logf("PodTerminators created during the flood: %q", legit)
	stoppedErr := running()
	if stoppedErr != nil {
		t.Error(stoppedErr)
	} else if !leading() {
		t.Error("the replica no longer leads after the flood")
	}
	changes, renewals, longest := leases.stop(fullStrength, ended)
	t.Logf("Lease renewals during the %s of flood at full strength: %d, at most %s apart (RetryPeriod 2s, RenewDeadline 10s)", ended.Sub(fullStrength).Round(time.Second), renewals, longest.Round(time.Millisecond))
	for _, c := range changes {
		t.Errorf("the Lease changed hands during the flood: %s", c)
	}
	// Renewals went on while the flood was at full strength (a leader that
	// cannot renew for RenewDeadline stops leading).
	if renewals == 0 {
		t.Errorf("got no Lease renewal in the %s the flood was at full strength, want renewals to go on", ended.Sub(fullStrength).Round(time.Second))
	}
	// The flood met the limits: the reviews and token reviews beyond them
	// were answered at once, without asking the API server.
	if webhookAnswers.get("429") == 0 {
		t.Error("the webhook answered no review of the flood 429, want those beyond its reviews at once (webhook.MaxReviews) refused")
	}
	if metricsAnswers.get("503") == 0 {
		t.Error("/metrics answered no request of the flood 503, want those beyond its reviews at once refused")
	}
	// Nothing the flood sent was allowed: its users may delete no pod.
	if n := webhookAnswers.get("allowed"); n > 0 {
		t.Errorf("the webhook allowed %d reviews of the flood's users, who may delete no pod", n)
	}
	if n := metricsAnswers.get("200"); n > 0 {
		t.Errorf("/metrics answered 200 to %d random tokens", n)
	}
	// At most a line per throttled message and interval: a few dozen, not
	// one per request.
	const maxLines = 60
	if linesDuring > maxLines {
		t.Errorf("the operator wrote %d log lines during the flood, want at most %d; the first:\n%s", linesDuring, maxLines, logs.kept())
	}
	t.Logf("log lines written during the flood: %d", linesDuring)

	if stoppedErr != nil {
		return
	}
	// Once the flood is over, the webhook admits again.
	waitFor(t, 10*time.Second, "the webhook admits the admin's PodTerminator after the flood", func() error {
		return tryCreate(ctx, asAdmin, "default")
	})
}

// flood sends the requests newRequest makes, one at a time, until ctx is
// done, counting the answers by HTTP status and, for AdmissionReviews, by
// verdict. It calls sent once, as it sends its first request.
func flood(ctx context.Context, c *http.Client, a *answers, sent func(), newRequest func() (*http.Request, error)) {
	sent = sync.OnceFunc(sent)
	defer sent()
	for ctx.Err() == nil {
		req, err := newRequest()
		if err != nil {
			a.add("request: " + err.Error())
			return
		}
		sent()
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				a.add("error")
			}
		} else {
			a.add(verdict(resp))
		}
		select {
		case <-ctx.Done():
		case <-time.After(floodPause):
		}
	}
}

// verdict is "allowed" or "refused" for a 200 AdmissionReview, else the
// HTTP status code.
func verdict(resp *http.Response) string {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprint(resp.StatusCode)
	}
	var ar admissionv1.AdmissionReview
	if json.Unmarshal(body, &ar) != nil || ar.Response == nil {
		return "200"
	}
	if ar.Response.Allowed {
		return "allowed"
	}
	return "refused"
}

// floodReview is an AdmissionReview creating a valid PodTerminator that
// targets validation.MaxNamespaces namespaces, in the name of user, who
// may delete no pod: each costs the webhook the most access questions.
func floodReview(t *testing.T, user string) []byte {
	namespaces := make([]string, validation.MaxNamespaces)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("flood-%d", i)
	}
	pt := &chaosv1beta1.PodTerminator{
		TypeMeta:   metav1.TypeMeta{APIVersion: chaosv1beta1.SchemeGroupVersion.String(), Kind: "PodTerminator"},
		ObjectMeta: metav1.ObjectMeta{Name: "flood"},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Namespaces:  namespaces,
			Termination: chaosv1beta1.Termination{Percent: 10, MinimumInstances: ptr.To[int32](1)},
			Period:      &metav1.Duration{Duration: 60 * time.Second},
		},
	}
	obj, err := json.Marshal(pt)
	if err != nil {
		t.Error(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(randomToken()),
			Kind:      metav1.GroupVersionKind{Group: chaosv1beta1.GroupName, Version: "v1beta1", Kind: "PodTerminator"},
			Resource:  metav1.GroupVersionResource{Group: chaosv1beta1.GroupName, Version: "v1beta1", Resource: "podterminators"},
			Name:      pt.Name,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: obj},
			UserInfo:  authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}},
		},
	})
	if err != nil {
		t.Error(err)
	}
	return body
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// timedOut reports whether err says the API server's call to the webhook,
// or the request itself, ran out of time.
func timedOut(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		strings.Contains(err.Error(), "deadline exceeded") || strings.Contains(err.Error(), "Timeout")
}

// answers counts answers by kind.
type answers struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *answers) add(kind string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[kind]++
}

func (a *answers) get(kind string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[kind]
}

func (a *answers) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprint(a.n)
}

// lineCounter counts the lines written to it and keeps the first few since
// it was last restarted.
type lineCounter struct {
	mu    sync.Mutex
	lines atomic.Int64
	first bytes.Buffer
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.lines.Add(int64(bytes.Count(p, []byte("\n"))))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.Len() < 8<<10 {
		c.first.Write(p)
	}
	return len(p), nil
}

func (c *lineCounter) count() int { return int(c.lines.Load()) }

// restart forgets the lines kept and returns the count so far.
func (c *lineCounter) restart() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.first.Reset()
	return c.count()
}

func (c *lineCounter) kept() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first.String()
}

// leaseWatch follows the operator's Lease, read every 200ms: who holds it,
// how often it changed hands, and its renewals.
type leaseWatch struct {
	stopPolling context.CancelFunc
	done        chan struct{}

	mu      sync.Mutex
	changes []string
	// renewals are the renewal times seen.
	renewals []time.Time
	// longest is the longest time between two renewals seen.
	longest time.Duration
}

// watchLease starts following the Lease, as it is now.
func watchLease(t *testing.T, client kubernetes.Interface) *leaseWatch {
	t.Helper()
	leases := client.CoordinationV1().Leases(operator.DefaultNamespace)
	l, err := leases.Get(context.Background(), operator.DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lw := &leaseWatch{stopPolling: cancel, done: make(chan struct{})}
	holder, transitions, renewed := ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseTransitions, 0), l.Spec.RenewTime
	go func() {
		defer close(lw.done)
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			l, err := leases.Get(ctx, operator.DefaultName, metav1.GetOptions{})
			if err != nil {
				continue // the API server busy, or the test ending: the next read tells
			}
			h, tr := ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseTransitions, 0)
			lw.mu.Lock()
			if h != holder || tr != transitions {
				lw.changes = append(lw.changes, fmt.Sprintf("held by %q (transitions %d), was %q (%d)", h, tr, holder, transitions))
				holder, transitions = h, tr
			}
			if r := l.Spec.RenewTime; r != nil && (renewed == nil || r.After(renewed.Time)) {
				lw.renewals = append(lw.renewals, r.Time)
				if renewed != nil {
					lw.longest = max(lw.longest, r.Sub(renewed.Time))
				}
				renewed = r
			}
			lw.mu.Unlock()
		}
	}()
	return lw
}

// stop stops following the Lease and returns what it saw: the changes of
// hands, the renewals between from and to, and the longest time between
// two renewals.
func (lw *leaseWatch) stop(from, to time.Time) (changes []string, renewals int, longest time.Duration) {
	lw.stopPolling()
	<-lw.done
	for _, r := range lw.renewals {
		if !r.Before(from) && !r.After(to) {
			renewals++
		}
	}
	return lw.changes, renewals, lw.longest
}
