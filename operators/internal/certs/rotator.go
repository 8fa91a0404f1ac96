package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxAttempts bounds the read, check, write rounds lost to other replicas
// writing the Secret at the same time.
const maxAttempts = 5

// maxSteps bounds the rotation steps one Sync takes: a rotation has four
// (stage, trusted, promote, prune), creating the Secret one.
const maxSteps = 8

// Rotator serves the self-signed certificate kept in a Secret and rotates it
// before it expires, with the other replicas, so that every certificate any
// of them serves is trusted by the webhook configuration (see the package
// documentation for the steps). It is safe for concurrent use.
type Rotator struct {
	opts Options

	mu       sync.RWMutex
	cert     *tls.Certificate // never nil once NewRotator returned
	caBundle []byte
}

// NewRotator makes sure the Secret opts.Namespace/opts.SecretName holds a
// servable certificate, creating or repairing it as needed, injects its CA
// bundle into the webhook configuration opts.WebhookConfigName when set,
// and returns a Rotator serving that certificate. Call Run to keep it
// rotating.
//
// It returns an error wrapping ErrInvalidOptions when opts are invalid, and
// an error when the Secret or the webhook configuration cannot be read or
// written.
func NewRotator(ctx context.Context, opts Options) (*Rotator, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	r := &Rotator{opts: opts}
	if err := r.Sync(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// GetCertificate returns the serving certificate last read from the Secret,
// with its Leaf set, for tls.Config.GetCertificate. It never returns an
// error.
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cert, nil
}

// CABundle returns the PEM bundle of the CAs the webhook configuration
// trusts, as last read from the Secret: the CA of the certificate served,
// and during a rotation the next or the previous one.
func (r *Rotator) CABundle() []byte {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.caBundle
}

// Run calls Sync every opts.SyncInterval until ctx is done, logging its
// errors and trying again at the next tick; meanwhile the last certificate
// read keeps being served. It returns once ctx is done, having started no
// goroutine.
func (r *Rotator) Run(ctx context.Context) {
	ticker := time.NewTicker(r.opts.SyncInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.opts.Logger.Error("could not sync the webhook certificate", "err", err)
		}
	}
}

// Sync reads the Secret, makes the webhook configuration trust its CA
// bundle, takes every rotation step due (see plan), and serves the
// resulting certificate. Every write is made at the resourceVersion read: a
// replica that loses a race reads the winner's Secret and carries on from
// it, so two replicas never both issue a certificate; a few races lost in a
// row are an error.
func (r *Rotator) Sync(ctx context.Context) error {
	opts := r.opts
	secrets := opts.Client.CoreV1().Secrets(opts.Namespace)
	ref := opts.Namespace + "/" + opts.SecretName
	lost := 0
	for range maxSteps {
		current, err := secrets.Get(ctx, opts.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			current = nil
		case err != nil:
			return fmt.Errorf("could not get secret %s: %w", ref, err)
		}
		st := stateOf(current)
		now := opts.Now()
		if current != nil && opts.WebhookConfigName != "" {
			if err := injectCABundle(ctx, opts.Client, opts.WebhookConfigName, encodeCAs(st.cas), now); err != nil {
				return err
			}
		}
		if current != nil && opts.CRDName != "" {
			if err := injectConversionCABundle(ctx, opts.CRDClient, opts.CRDName, encodeCAs(st.cas), now); err != nil {
				return err
			}
		}

		step, next, serving, err := plan(st, opts, now)
		if err != nil {
			return fmt.Errorf("could not rotate the certificate of secret %s: %w", ref, err)
		}
		if step == stepNone {
			r.mu.Lock()
			r.cert, r.caBundle = serving, encodeCAs(st.cas)
			r.mu.Unlock()
			return nil
		}

		if current == nil {
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.SecretName},
				Type:       corev1.SecretTypeTLS,
			}
			next.writeTo(s)
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		} else {
			// current came from the API server, not from a shared
			// cache, but copy it anyway so that the object read is never
			// changed.
			updated := current.DeepCopy()
			next.writeTo(updated)
			// The type of a Secret is immutable: an existing Secret keeps
			// its own, and only an untyped one becomes kubernetes.io/tls.
			if updated.Type == "" {
				updated.Type = corev1.SecretTypeTLS
			}
			_, err = secrets.Update(ctx, updated, metav1.UpdateOptions{})
		}
		switch {
		case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
			// Another replica wrote it since we read it: start over
			// from theirs.
			if lost++; lost == maxAttempts {
				return fmt.Errorf("could not write secret %s: other writers won %d attempts in a row", ref, maxAttempts)
			}
		case err != nil && current == nil:
			return fmt.Errorf("could not create secret %s: %w", ref, err)
		case err != nil:
			return fmt.Errorf("could not update secret %s: %w", ref, err)
		default:
			lost = 0
			opts.Logger.Info("rotated the webhook certificate", "secret", ref, "step", step.String())
		}
	}
	return fmt.Errorf("could not settle secret %s: still changing after %d steps", ref, maxSteps)
}
