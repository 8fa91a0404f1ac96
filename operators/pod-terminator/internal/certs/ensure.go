package certs

import (
	"context"
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keys of the Secret: kubernetes.io/tls's two, plus the CA cert-manager also
// writes.
const (
	keyCert = corev1.TLSCertKey       // tls.crt
	keyKey  = corev1.TLSPrivateKeyKey // tls.key
	keyCA   = "ca.crt"
)

// maxAttempts bounds the read, check, write rounds lost to other replicas
// writing the Secret at the same time.
const maxAttempts = 5

// Ensure returns the serving certificate, with its Leaf set, and the PEM
// bundle of the CA that signed it, after making sure both are stored in the
// Secret opts.Namespace/opts.SecretName and, when opts.WebhookConfigName is
// set, that every webhook of that ValidatingWebhookConfiguration trusts the
// CA.
//
// The certificate in the Secret is reused when it is usable: it parses,
// matches its key, is signed by ca.crt, covers every host and is not in the
// last third of its validity (neither is the CA). Otherwise a new CA and
// serving certificate are generated and written: the Secret is created when
// missing, or updated at the resourceVersion read. A replica that loses a
// race to create or update the Secret re-reads it and uses the winner's
// certificate; a few rounds lost in a row are an error.
//
// Ensure returns an error wrapping ErrInvalidOptions when opts are invalid.
func Ensure(ctx context.Context, opts Options) (*tls.Certificate, []byte, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, nil, err
	}
	cert, ca, err := ensureSecret(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if opts.WebhookConfigName != "" {
		if err := injectCABundle(ctx, opts.Client, opts.WebhookConfigName, ca); err != nil {
			return nil, nil, err
		}
	}
	return cert, ca, nil
}

// ensureSecret reuses the Secret's certificate when usable and otherwise
// writes a new one, starting over when another writer got there first.
func ensureSecret(ctx context.Context, opts Options) (*tls.Certificate, []byte, error) {
	secrets := opts.Client.CoreV1().Secrets(opts.Namespace)
	ref := opts.Namespace + "/" + opts.SecretName
	for range maxAttempts {
		current, err := secrets.Get(ctx, opts.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			current = nil
		case err != nil:
			return nil, nil, fmt.Errorf("could not get secret %s: %w", ref, err)
		}
		if current != nil {
			stored := bundle{certPEM: current.Data[keyCert], keyPEM: current.Data[keyKey], caPEM: current.Data[keyCA]}
			// An unusable certificate is not an error: it is replaced below.
			if cert, err := stored.usable(opts.Hosts, opts.Now()); err == nil {
				return cert, stored.caPEM, nil
			}
		}

		fresh, err := generate(opts.Hosts, opts.Now(), opts.Validity)
		if err != nil {
			return nil, nil, fmt.Errorf("could not generate certificate for secret %s: %w", ref, err)
		}
		cert, err := keyPair(fresh.certPEM, fresh.keyPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("could not load generated certificate for secret %s: %w", ref, err)
		}

		if current == nil {
			_, err = secrets.Create(ctx, newSecret(opts.Namespace, opts.SecretName, fresh), metav1.CreateOptions{})
			switch {
			case apierrors.IsAlreadyExists(err):
				continue // another replica created it first: read and use theirs
			case err != nil:
				return nil, nil, fmt.Errorf("could not create secret %s: %w", ref, err)
			}
			return cert, fresh.caPEM, nil
		}

		// current came from the API server, not from a shared cache, but
		// copy it anyway so that the object read is never changed.
		updated := current.DeepCopy()
		if updated.Data == nil {
			updated.Data = map[string][]byte{}
		}
		updated.Data[keyCert], updated.Data[keyKey], updated.Data[keyCA] = fresh.certPEM, fresh.keyPEM, fresh.caPEM
		// The type of a Secret is immutable: an existing Secret keeps its
		// own, and only an untyped one becomes kubernetes.io/tls.
		if updated.Type == "" {
			updated.Type = corev1.SecretTypeTLS
		}
		_, err = secrets.Update(ctx, updated, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err):
			continue // another replica wrote it since we read it: start over
		case err != nil:
			return nil, nil, fmt.Errorf("could not update secret %s: %w", ref, err)
		}
		return cert, fresh.caPEM, nil
	}
	return nil, nil, fmt.Errorf("could not write secret %s: other writers won %d attempts in a row", ref, maxAttempts)
}

// newSecret returns the kubernetes.io/tls Secret holding b.
func newSecret(namespace, name string, b bundle) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{keyCert: b.certPEM, keyKey: b.keyPEM, keyCA: b.caPEM},
	}
}
