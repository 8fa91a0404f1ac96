package certs_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/operators/internal/certs"
)

// withOptimisticConcurrency makes client's creates set a resourceVersion
// and its updates fail with a conflict unless they carry the stored one, as
// the API server does (the fake tracker does not).
func withOptimisticConcurrency(client *fake.Clientset) {
	version := 0
	next := func() string { version++; return strconv.Itoa(version) }
	client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := meta.Accessor(a.(k8stesting.CreateAction).GetObject())
		if err != nil {
			return true, nil, err
		}
		obj.SetResourceVersion(next())
		return false, nil, nil // the tracker stores it
	})
	client.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		update := a.(k8stesting.UpdateAction)
		obj, err := meta.Accessor(update.GetObject())
		if err != nil {
			return true, nil, err
		}
		stored, err := client.Tracker().Get(update.GetResource(), update.GetNamespace(), obj.GetName())
		if err != nil {
			return true, nil, err
		}
		storedMeta, err := meta.Accessor(stored)
		if err != nil {
			return true, nil, err
		}
		if storedMeta.GetResourceVersion() != obj.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(update.GetResource().GroupResource(), obj.GetName(), errSinceRead)
		}
		obj.SetResourceVersion(next())
		if err := client.Tracker().Update(update.GetResource(), update.GetObject(), update.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, update.GetObject(), nil
	})
}

var errSinceRead = apierrors.NewBadRequest("the object has been modified since read")

// clock is a time the test moves forward.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// caBundleOf returns the caBundle of the first webhook of the test's
// configuration.
func caBundleOf(t *testing.T, client *fake.Clientset) []byte {
	t.Helper()
	cfg, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), configName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("could not get webhook configuration: %v", err)
	}
	return cfg.Webhooks[0].ClientConfig.CABundle
}

// Two replicas, one reading the Secret half as often, through several
// rotations: whatever either serves is trusted by every caBundle an API
// server may still use, that is any written less than PropagationDelay ago.
func TestRotationKeepsEveryServedCertificateTrusted(t *testing.T) {
	ctx := context.Background()
	const (
		validity = 30 * time.Hour // renewal due 20h after issuance
		interval = time.Hour
		delay    = 2 * time.Hour
		step     = 30 * time.Minute
	)
	client := fake.NewClientset(webhookConfig(nil, nil))
	withOptimisticConcurrency(client)
	clk := &clock{now: t0}
	opts := options(client)
	opts.WebhookConfigName = configName
	opts.Validity, opts.SyncInterval, opts.PropagationDelay, opts.Now = validity, interval, delay, clk.Now

	a, err := certs.NewRotator(ctx, opts)
	if err != nil {
		t.Fatalf("NewRotator a: %v", err)
	}
	b, err := certs.NewRotator(ctx, opts)
	if err != nil {
		t.Fatalf("NewRotator b: %v", err)
	}

	// written is every caBundle the configuration held, and since when.
	type written struct {
		at     time.Time
		bundle []byte
	}
	history := []written{{at: t0, bundle: caBundleOf(t, client)}}
	servedCAs := map[string]bool{}
	maxCAs, pruned := 0, false

	for i := 1; clk.now.Before(t0.Add(100 * time.Hour)); i++ {
		clk.now = clk.now.Add(step)
		if err := a.Sync(ctx); err != nil {
			t.Fatalf("at %s, a: Sync: %v", clk.now, err)
		}
		if i%2 == 0 {
			if err := b.Sync(ctx); err != nil {
				t.Fatalf("at %s, b: Sync: %v", clk.now, err)
			}
		}
		if current := caBundleOf(t, client); !bytes.Equal(current, history[len(history)-1].bundle) {
			history = append(history, written{at: clk.now, bundle: current})
		}

		// The bundles API servers may use now: the one in effect
		// PropagationDelay ago, and every one written since.
		var visible [][]byte
		for j, w := range history {
			if w.at.After(clk.now.Add(-delay)) || j == len(history)-1 || history[j+1].at.After(clk.now.Add(-delay)) {
				visible = append(visible, w.bundle)
			}
		}
		for name, r := range map[string]*certs.Rotator{"a": a, "b": b} {
			cert, err := r.GetCertificate(nil)
			if err != nil {
				t.Fatalf("%s: GetCertificate: %v", name, err)
			}
			for _, bundle := range visible {
				if err := verify(cert.Leaf, bundle, serviceHost, clk.now); err != nil {
					t.Fatalf("at t0+%s, %s serves a certificate a caBundle in use does not trust: %v", clk.now.Sub(t0), name, err)
				}
			}
			servedCAs[string(cert.Leaf.AuthorityKeyId)] = true
		}
		n := len(certsIn(t, history[len(history)-1].bundle))
		if n == 1 && maxCAs == 2 {
			pruned = true
		}
		maxCAs = max(maxCAs, n)
	}

	if got := len(servedCAs); got < 4 {
		t.Errorf("got %d CAs served in 100h, want at least 4 (3 rotations)", got)
	}
	if maxCAs != 2 {
		t.Errorf("got at most %d CAs in the bundle, want 2 during a rotation", maxCAs)
	}
	if !pruned {
		t.Error("got the old CA never dropped from the bundle, want it dropped once expired")
	}
	if got, want := caBundleOf(t, client), getSecret(t, client).Data["ca.crt"]; !bytes.Equal(got, want) {
		t.Error("got a caBundle different from the secret's ca.crt, want the same")
	}
}

// One rotation, step by step, as seen in the Secret.
func TestRotationSteps(t *testing.T) {
	ctx := context.Background()
	const (
		validity = 30 * time.Hour
		delay    = 2 * time.Hour
	)
	client := fake.NewClientset(webhookConfig(nil))
	withOptimisticConcurrency(client)
	clk := &clock{now: t0}
	opts := options(client)
	opts.WebhookConfigName = configName
	opts.Validity, opts.SyncInterval, opts.PropagationDelay, opts.Now = validity, time.Hour, delay, clk.Now
	r, err := certs.NewRotator(ctx, opts)
	if err != nil {
		t.Fatalf("NewRotator: %v", err)
	}
	first, _ := r.GetCertificate(nil)
	oldCA := certsIn(t, getSecret(t, client).Data["ca.crt"])[0]

	steps := []struct {
		name       string
		at         time.Duration // after t0
		wantNew    bool          // the certificate served is the next one
		wantCAs    int
		wantNext   bool
		wantOldCA  bool
		wantBundle bool // the caBundle equals ca.crt
	}{
		{name: "before the last third nothing changes", at: 19 * time.Hour, wantCAs: 1, wantOldCA: true},
		{name: "in the last third the next certificate is staged and its CA trusted", at: 20 * time.Hour, wantCAs: 2, wantNext: true, wantOldCA: true},
		{name: "before the propagation delay the old certificate is still served", at: 21*time.Hour + 59*time.Minute, wantCAs: 2, wantNext: true, wantOldCA: true},
		{name: "after the propagation delay the next certificate is served and the old CA kept", at: 22 * time.Hour, wantNew: true, wantCAs: 2, wantOldCA: true},
		{name: "until the old CA expires it stays trusted", at: 30 * time.Hour, wantNew: true, wantCAs: 2, wantOldCA: true},
		{name: "once the old CA expired it is dropped", at: 30*time.Hour + time.Second, wantNew: true, wantCAs: 1},
	}
	for _, s := range steps {
		clk.now = t0.Add(s.at)
		if err := r.Sync(ctx); err != nil {
			t.Fatalf("%s: Sync: %v", s.name, err)
		}
		secret := getSecret(t, client)
		cert, _ := r.GetCertificate(nil)
		cas := certsIn(t, secret.Data["ca.crt"])
		if got := cert.Leaf.SerialNumber.Cmp(first.Leaf.SerialNumber) != 0; got != s.wantNew {
			t.Errorf("%s: got a new certificate served %t, want %t", s.name, got, s.wantNew)
		}
		if got := len(cas); got != s.wantCAs {
			t.Errorf("%s: got %d CAs in ca.crt, want %d", s.name, got, s.wantCAs)
		}
		if _, got := secret.Data["next.crt"]; got != s.wantNext {
			t.Errorf("%s: got next.crt %t, want %t", s.name, got, s.wantNext)
		}
		if got := containsCA(cas, oldCA); got != s.wantOldCA {
			t.Errorf("%s: got the old CA trusted %t, want %t", s.name, got, s.wantOldCA)
		}
		if !bytes.Equal(caBundleOf(t, client), secret.Data["ca.crt"]) {
			t.Errorf("%s: got a caBundle different from ca.crt, want the same", s.name)
		}
		if err := verify(cert.Leaf, secret.Data["ca.crt"], serviceHost, clk.now); err != nil {
			t.Errorf("%s: got the served certificate untrusted: %v", s.name, err)
		}
	}
}

func containsCA(cas []*x509.Certificate, ca *x509.Certificate) bool {
	for _, c := range cas {
		if c.Equal(ca) {
			return true
		}
	}
	return false
}

// Two replicas find the renewal due at the same time; the API server's
// optimistic concurrency lets one stage the next certificate, and the other
// adopts it instead of issuing its own.
func TestConcurrentRenewalsIssueOneCertificate(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(webhookConfig(nil))
	withOptimisticConcurrency(client)
	clk := &clock{now: t0}
	opts := options(client)
	opts.WebhookConfigName = configName
	opts.Validity, opts.SyncInterval, opts.PropagationDelay, opts.Now = 30*time.Hour, time.Hour, 2*time.Hour, clk.Now
	a, err := certs.NewRotator(ctx, opts)
	if err != nil {
		t.Fatalf("NewRotator a: %v", err)
	}
	b, err := certs.NewRotator(ctx, opts)
	if err != nil {
		t.Fatalf("NewRotator b: %v", err)
	}

	clk.now = t0.Add(20 * time.Hour)
	before := getSecret(t, client)
	if err := b.Sync(ctx); err != nil {
		t.Fatalf("b: Sync: %v", err)
	}
	byB := getSecret(t, client)
	if _, ok := byB.Data["next.crt"]; !ok {
		t.Fatal("got no next.crt staged by b, want one")
	}
	// a read the Secret before b wrote it.
	stale := true
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !stale {
			return false, nil, nil
		}
		stale = false
		return true, before.DeepCopy(), nil
	})
	client.ClearActions()
	if err := a.Sync(ctx); err != nil {
		t.Fatalf("a: Sync: %v", err)
	}

	after := getSecret(t, client)
	if !bytes.Equal(after.Data["next.crt"], byB.Data["next.crt"]) {
		t.Error("got a next.crt other than b's, want b's kept")
	}
	if got := len(certsIn(t, after.Data["ca.crt"])); got != 2 {
		t.Errorf("got %d CAs in ca.crt, want 2: the current and b's next", got)
	}
	// a's stage conflicted; a then read b's Secret and had nothing to do.
	if got := countActions(client, "update", "secrets"); got != 1 {
		t.Errorf("got %d secret updates by a, want 1 (refused)", got)
	}
	if !bytes.Equal(caBundleOf(t, client), after.Data["ca.crt"]) {
		t.Error("got a caBundle different from ca.crt, want the same")
	}
	for name, r := range map[string]*certs.Rotator{"a": a, "b": b} {
		if !bytes.Equal(r.CABundle(), after.Data["ca.crt"]) {
			t.Errorf("%s: got a ca bundle other than the secret's, want the same", name)
		}
	}
}

// A replica that read the Secret before another changed ca.crt must not
// write its older bundle over the newer one in the webhook configuration.
func TestInjectionNeverWritesAnOlderBundle(t *testing.T) {
	stale := ensureSecret(t) // its CA issued at t0
	client := fake.NewClientset()
	opts := options(client)
	opts.Now = at(t0.Add(time.Hour))
	if _, _, err := ensure(context.Background(), opts); err != nil {
		t.Fatalf("NewRotator: %v", err)
	}
	newer := append(append([]byte{}, stale.Data["ca.crt"]...), getSecret(t, client).Data["ca.crt"]...)

	tests := []struct {
		name       string
		held       []byte
		wantBundle []byte
	}{
		{name: "a bundle with a newer CA is kept", held: newer, wantBundle: newer},
		{name: "a bundle with older CAs only is replaced", held: []byte("stale"), wantBundle: stale.Data["ca.crt"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(stale.DeepCopy(), webhookConfig(tt.held))
			opts := options(client)
			opts.WebhookConfigName = configName
			if _, _, err := ensure(context.Background(), opts); err != nil {
				t.Fatalf("NewRotator: %v", err)
			}
			if got := caBundleOf(t, client); !bytes.Equal(got, tt.wantBundle) {
				t.Errorf("got caBundle with %d CAs, want %d", len(certsIn(t, got)), len(certsIn(t, tt.wantBundle)))
			}
		})
	}
}
