package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/operators/internal/certs"
)

const (
	namespace   = "kooper-example"
	secretName  = "example-webhook-tls"
	serviceHost = "example-webhook.kooper-example.svc"
	ipHost      = "127.0.0.1"
	configName  = "example"
)

// t0 is when the tests run NewRotator first: fixed, so that the certificates'
// validity is known.
var t0 = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

func options(client *fake.Clientset) certs.Options {
	return certs.Options{
		Client:     client,
		Namespace:  namespace,
		SecretName: secretName,
		Hosts:      []string{serviceHost, ipHost},
		Now:        at(t0),
	}
}

// webhookConfig returns a configuration with one webhook per caBundle.
func webhookConfig(caBundles ...[]byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configName}}
	for i, ca := range caBundles {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:         []string{"pods.example.com", "widgets.admission.example.com"}[i%2],
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: ca},
		})
	}
	return cfg
}

// countActions counts the client's calls with verb on resource.
func countActions(client *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func getSecret(t *testing.T, client *fake.Clientset) *corev1.Secret {
	t.Helper()
	s, err := client.CoreV1().Secrets(namespace).Get(context.Background(), secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("could not get secret: %v", err)
	}
	return s
}

// ensureSecret runs NewRotator with the default options on a fresh client and
// returns the Secret it wrote, to seed other clients.
func ensureSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	client := fake.NewClientset()
	if _, _, err := ensure(context.Background(), options(client)); err != nil {
		t.Fatalf("NewRotator: %v", err)
	}
	return getSecret(t, client)
}

// ensure runs NewRotator and returns what it serves and the CA bundle.
func ensure(ctx context.Context, opts certs.Options) (*tls.Certificate, []byte, error) {
	r, err := certs.NewRotator(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	cert, err := r.GetCertificate(nil)
	if err != nil {
		return nil, nil, err
	}
	return cert, r.CABundle(), nil
}

// certsIn parses every certificate of a PEM bundle.
func certsIn(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("could not parse certificate: %v", err)
		}
		out = append(out, c)
	}
}

func serialOf(t *testing.T, certPEM []byte) *big.Int {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no pem block in certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("could not parse certificate: %v", err)
	}
	return c.SerialNumber
}

// verify checks that leaf is a serving certificate for host signed by ca at
// now.
func verify(leaf *x509.Certificate, ca []byte, host string, now time.Time) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return errors.New("no certificate in ca bundle")
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		DNSName:     host,
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func TestNewRotatorCreatesSecretAndInjectsCABundle(t *testing.T) {
	client := fake.NewClientset(webhookConfig(nil, []byte("stale")))
	opts := options(client)
	opts.WebhookConfigName = configName

	cert, ca, err := ensure(context.Background(), opts)
	if err != nil {
		t.Fatalf("NewRotator: %v", err)
	}
	if cert.Leaf == nil {
		t.Fatal("got a certificate without Leaf, want Leaf set")
	}

	secret := getSecret(t, client)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("got secret type %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("got no %s in secret, want it", k)
		}
	}
	if !bytes.Equal(secret.Data["ca.crt"], ca) {
		t.Error("got a ca bundle different from the secret's ca.crt, want the same")
	}
	if got, want := serialOf(t, secret.Data["tls.crt"]), cert.Leaf.SerialNumber; got.Cmp(want) != 0 {
		t.Errorf("got serial %s in secret, want the returned %s", got, want)
	}

	leaf := cert.Leaf
	if got, want := leaf.DNSNames, []string{serviceHost}; !slices.Equal(got, want) {
		t.Errorf("got DNS names %v, want %v", got, want)
	}
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP(ipHost)) {
		t.Errorf("got IP addresses %v, want [%s]", leaf.IPAddresses, ipHost)
	}
	if got, want := leaf.NotBefore, t0.Add(-time.Minute); !got.Equal(want) {
		t.Errorf("got NotBefore %s, want %s", got, want)
	}
	if got, want := leaf.NotAfter, t0.Add(365*24*time.Hour); !got.Equal(want) {
		t.Errorf("got NotAfter %s, want %s", got, want)
	}

	verifications := []struct {
		name    string
		host    string
		wantErr bool
	}{
		{name: "the service DNS name verifies", host: serviceHost},
		{name: "the IP address verifies", host: ipHost},
		{name: "another DNS name does not verify", host: "other.kooper-example.svc", wantErr: true},
		{name: "another IP address does not verify", host: "10.0.0.1", wantErr: true},
	}
	for _, v := range verifications {
		t.Run(v.name, func(t *testing.T) {
			err := verify(leaf, ca, v.host, t0)
			if gotErr := err != nil; gotErr != v.wantErr {
				t.Errorf("got verify error %v, want error: %t", err, v.wantErr)
			}
		})
	}

	cfg, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), configName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("could not get webhook configuration: %v", err)
	}
	for _, w := range cfg.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, ca) {
			t.Errorf("got webhook %s caBundle %q, want the ca", w.Name, w.ClientConfig.CABundle)
		}
	}
}

func TestNewRotatorReusesStagesOrReplaces(t *testing.T) {
	const validity = 30 * time.Hour
	// The chain lives validity plus the minute of clock skew; its last third
	// starts 10h0m20s before NotAfter, at t0 + 19h59m40s.
	const (
		reuse   = "reuse"   // same certificate, same bundle, no write
		stage   = "stage"   // same certificate served, next one staged, both CAs trusted
		replace = "replace" // a new certificate served at once
	)
	tests := []struct {
		name  string
		hosts []string
		now   time.Time
		want  string
	}{
		{name: "the same options reuse the certificate", now: t0, want: reuse},
		{name: "fewer hosts reuse the certificate", hosts: []string{serviceHost}, now: t0, want: reuse},
		{name: "just before the last third of validity reuses the certificate", now: t0.Add(19*time.Hour + 59*time.Minute), want: reuse},
		{name: "inside the last third of validity stages the next certificate", now: t0.Add(20 * time.Hour), want: stage},
		{name: "after expiry replaces the certificate", now: t0.Add(31 * time.Hour), want: replace},
		{name: "an added DNS name stages the next certificate", hosts: []string{serviceHost, ipHost, serviceHost + ".cluster.local"}, now: t0, want: stage},
		{name: "a changed IP address stages the next certificate", hosts: []string{serviceHost, "10.0.0.1"}, now: t0, want: stage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			opts := options(client)
			opts.Validity = validity
			first, firstCA, err := ensure(context.Background(), opts)
			if err != nil {
				t.Fatalf("first NewRotator: %v", err)
			}
			client.ClearActions()

			if tt.hosts != nil {
				opts.Hosts = tt.hosts
			}
			opts.Now = at(tt.now)
			second, secondCA, err := ensure(context.Background(), opts)
			if err != nil {
				t.Fatalf("second NewRotator: %v", err)
			}

			renewed := first.Leaf.SerialNumber.Cmp(second.Leaf.SerialNumber) != 0
			if want := tt.want == replace; renewed != want {
				t.Errorf("got a new certificate served %t, want %t", renewed, want)
			}
			// Staging writes twice: the next pair with its CA, then the
			// time the webhook configuration was seen trusting it.
			wantUpdates := map[string]int{reuse: 0, stage: 2, replace: 1}[tt.want]
			if got := countActions(client, "update", "secrets"); got != wantUpdates {
				t.Errorf("got %d secret updates, want %d", got, wantUpdates)
			}
			if got := countActions(client, "create", "secrets"); got != 0 {
				t.Errorf("got %d secret creates, want 0", got)
			}
			wantCAs := map[string]int{reuse: 1, stage: 2, replace: 1}[tt.want]
			if got := len(certsIn(t, secondCA)); got != wantCAs {
				t.Errorf("got %d CAs in the bundle, want %d", got, wantCAs)
			}
			if caChanged := !bytes.Equal(firstCA, secondCA); caChanged != (tt.want != reuse) {
				t.Errorf("got ca bundle changed %t, want %t", caChanged, tt.want != reuse)
			}
			secret := getSecret(t, client)
			if got := secret.Data["ca.crt"]; !bytes.Equal(got, secondCA) {
				t.Error("got a secret ca.crt different from the returned ca, want the same")
			}
			// The certificate served is trusted, for the hosts it was
			// issued for.
			if err := verify(second.Leaf, secondCA, second.Leaf.DNSNames[0], tt.now); err != nil {
				t.Errorf("got verify error %v for the certificate served, want none", err)
			}
			if tt.want != stage {
				if _, ok := secret.Data["next.crt"]; ok {
					t.Error("got a next.crt, want none")
				}
				return
			}
			next := certsIn(t, secret.Data["next.crt"])[0]
			for _, h := range opts.Hosts {
				if err := verify(next, secondCA, h, tt.now); err != nil {
					t.Errorf("got verify error for the next certificate and %s: %v, want none", h, err)
				}
			}
		})
	}
}

func TestNewRotatorReplacesUnusableSecret(t *testing.T) {
	valid, other := ensureSecret(t), ensureSecret(t)
	tests := []struct {
		name string
		typ  corev1.SecretType
		data map[string][]byte
	}{
		{
			name: "garbage in every key is replaced",
			typ:  corev1.SecretTypeTLS,
			data: map[string][]byte{"tls.crt": []byte("garbage"), "tls.key": []byte("garbage"), "ca.crt": []byte("garbage")},
		},
		{
			name: "an empty opaque secret is filled and keeps its type",
			typ:  corev1.SecretTypeOpaque,
		},
		{
			name: "a key that does not match the certificate is replaced",
			typ:  corev1.SecretTypeTLS,
			data: map[string][]byte{"tls.crt": valid.Data["tls.crt"], "tls.key": other.Data["tls.key"], "ca.crt": valid.Data["ca.crt"]},
		},
		{
			name: "a certificate not signed by ca.crt is replaced",
			typ:  corev1.SecretTypeTLS,
			data: map[string][]byte{"tls.crt": valid.Data["tls.crt"], "tls.key": valid.Data["tls.key"], "ca.crt": other.Data["ca.crt"]},
		},
		{
			name: "a missing ca.crt is replaced",
			typ:  corev1.SecretTypeTLS,
			data: map[string][]byte{"tls.crt": valid.Data["tls.crt"], "tls.key": valid.Data["tls.key"]},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
				Type:       tt.typ,
				Data:       tt.data,
			})

			cert, ca, err := ensure(context.Background(), options(client))
			if err != nil {
				t.Fatalf("NewRotator: %v", err)
			}
			if got := countActions(client, "update", "secrets"); got != 1 {
				t.Errorf("got %d secret updates, want 1", got)
			}
			if got := countActions(client, "create", "secrets"); got != 0 {
				t.Errorf("got %d secret creates, want 0", got)
			}
			for _, serial := range []*big.Int{serialOf(t, valid.Data["tls.crt"]), serialOf(t, other.Data["tls.crt"])} {
				if cert.Leaf.SerialNumber.Cmp(serial) == 0 {
					t.Errorf("got serial %s from the unusable secret, want a new certificate", serial)
				}
			}
			if err := verify(cert.Leaf, ca, serviceHost, t0); err != nil {
				t.Errorf("got verify error %v, want none", err)
			}
			secret := getSecret(t, client)
			if secret.Type != tt.typ {
				t.Errorf("got secret type %q, want %q", secret.Type, tt.typ)
			}
			if got := serialOf(t, secret.Data["tls.crt"]); got.Cmp(cert.Leaf.SerialNumber) != 0 {
				t.Errorf("got serial %s in secret, want the returned %s", got, cert.Leaf.SerialNumber)
			}
		})
	}
}

func TestNewRotatorUsesOtherReplicasSecretWhenCreateLosesTheRace(t *testing.T) {
	winner := ensureSecret(t)
	client := fake.NewClientset()
	// Another replica creates the Secret between our Get and our Create.
	client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err := client.Tracker().Add(winner.DeepCopy()); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), secretName)
	})

	cert, ca, err := ensure(context.Background(), options(client))
	if err != nil {
		t.Fatalf("NewRotator: %v", err)
	}
	if got, want := cert.Leaf.SerialNumber, serialOf(t, winner.Data["tls.crt"]); got.Cmp(want) != 0 {
		t.Errorf("got serial %s, want the other replica's %s", got, want)
	}
	if !bytes.Equal(ca, winner.Data["ca.crt"]) {
		t.Error("got a ca different from the other replica's, want theirs")
	}
	if got := countActions(client, "update", "secrets"); got != 0 {
		t.Errorf("got %d secret updates, want 0", got)
	}
}

func TestNewRotatorStartsOverWhenUpdateConflicts(t *testing.T) {
	winner := ensureSecret(t)
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": []byte("garbage")},
	})
	// Another replica renews the Secret between our Get and our Update.
	client.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err := client.Tracker().Update(secretsResource, winner.DeepCopy(), namespace); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), secretName, errors.New("the object has been modified"))
	})

	cert, _, err := ensure(context.Background(), options(client))
	if err != nil {
		t.Fatalf("NewRotator: %v", err)
	}
	if got, want := cert.Leaf.SerialNumber, serialOf(t, winner.Data["tls.crt"]); got.Cmp(want) != 0 {
		t.Errorf("got serial %s, want the other replica's %s", got, want)
	}
	if got := countActions(client, "update", "secrets"); got != 1 {
		t.Errorf("got %d secret updates, want 1", got)
	}
}

func TestNewRotatorFails(t *testing.T) {
	forbidden := func(verb, resource string) func(*fake.Clientset) {
		return func(c *fake.Clientset) {
			c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("rbac"))
			})
		}
	}
	garbage := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		Type:       corev1.SecretTypeTLS,
	}
	tests := []struct {
		name       string
		objects    []runtime.Object
		react      func(*fake.Clientset)
		webhook    bool
		wantErr    string
		wantAPIErr func(error) bool // nil: the error wraps no API error
	}{
		{
			name:       "a failed secret get is named",
			react:      forbidden("get", "secrets"),
			wantErr:    "could not get secret kooper-example/example-webhook-tls: ",
			wantAPIErr: apierrors.IsForbidden,
		},
		{
			name:       "a failed secret create is named",
			react:      forbidden("create", "secrets"),
			wantErr:    "could not create secret kooper-example/example-webhook-tls: ",
			wantAPIErr: apierrors.IsForbidden,
		},
		{
			name:       "a failed secret update is named",
			objects:    []runtime.Object{garbage},
			react:      forbidden("update", "secrets"),
			wantErr:    "could not update secret kooper-example/example-webhook-tls: ",
			wantAPIErr: apierrors.IsForbidden,
		},
		{
			name:    "conflicts on every update give up",
			objects: []runtime.Object{garbage},
			react: func(c *fake.Clientset) {
				c.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), secretName, errors.New("modified"))
				})
			},
			wantErr: "could not write secret kooper-example/example-webhook-tls: other writers won 5 attempts in a row",
		},
		{
			name:       "a missing webhook configuration is named",
			webhook:    true,
			wantErr:    "could not get validatingwebhookconfiguration example: ",
			wantAPIErr: apierrors.IsNotFound,
		},
		{
			name:       "a failed webhook configuration update is named",
			objects:    []runtime.Object{webhookConfig(nil)},
			react:      forbidden("update", "validatingwebhookconfigurations"),
			webhook:    true,
			wantErr:    "could not update validatingwebhookconfiguration example: ",
			wantAPIErr: apierrors.IsForbidden,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objects...)
			if tt.react != nil {
				tt.react(client)
			}
			opts := options(client)
			if tt.webhook {
				opts.WebhookConfigName = configName
			}
			cert, ca, err := ensure(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.wantAPIErr != nil && !tt.wantAPIErr(err) {
				t.Errorf("got error %v, want it to wrap the API error", err)
			}
			if cert != nil || ca != nil {
				t.Error("got a certificate with the error, want none")
			}
		})
	}
}
