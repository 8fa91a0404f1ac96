package certs

import (
	"crypto/tls"
	"crypto/x509"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Keys of the Secret: kubernetes.io/tls's two, the CA bundle cert-manager
// also writes, and the next serving pair while a rotation is under way.
const (
	keyCert     = corev1.TLSCertKey       // tls.crt
	keyKey      = corev1.TLSPrivateKeyKey // tls.key
	keyCA       = "ca.crt"
	keyNextCert = "next.crt"
	keyNextKey  = "next.key"
)

// annotationTrustedSince, on the Secret, is when the webhook configuration
// was first seen holding the next pair's CA.
const annotationTrustedSince = "certs.kooperkit.io/next-trusted-since"

// step names the change plan makes to the Secret; empty: none.
type step string

const (
	stepNone     step = ""
	stepReplace  step = "replace"  // no servable pair: issue one at once
	stepStage    step = "stage"    // renewal due: issue the next pair, trust its CA
	stepTrusted  step = "trusted"  // the webhook configuration holds the next CA
	stepPromote  step = "promote"  // the next pair is trusted everywhere: serve it
	stepDropNext step = "dropnext" // the next pair cannot be served: forget it
	stepPruneCAs step = "prunecas" // drop expired CAs from the bundle
)

// state is the content of the Secret.
type state struct {
	serving pair                // tls.crt, tls.key
	next    pair                // next.crt, next.key; empty unless a rotation is under way
	cas     []*x509.Certificate // ca.crt: every CA the API server must trust
	// trustedSince is when the webhook configuration was seen holding
	// next's CA; zero until then, or with no next.
	trustedSince time.Time
}

// stateOf reads the Secret. Damaged values read as missing ones, which plan
// replaces.
func stateOf(s *corev1.Secret) state {
	if s == nil {
		return state{}
	}
	st := state{
		serving: pair{certPEM: s.Data[keyCert], keyPEM: s.Data[keyKey]},
		next:    pair{certPEM: s.Data[keyNextCert], keyPEM: s.Data[keyNextKey]},
		cas:     parseCAs(s.Data[keyCA]),
	}
	st.trustedSince, _ = time.Parse(time.RFC3339Nano, s.Annotations[annotationTrustedSince])
	return st
}

// writeTo stores st in s's data and annotations, leaving its other keys.
func (st state) writeTo(s *corev1.Secret) {
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Data[keyCert], s.Data[keyKey], s.Data[keyCA] = st.serving.certPEM, st.serving.keyPEM, encodeCAs(st.cas)
	if st.next.empty() {
		delete(s.Data, keyNextCert)
		delete(s.Data, keyNextKey)
	} else {
		s.Data[keyNextCert], s.Data[keyNextKey] = st.next.certPEM, st.next.keyPEM
	}
	if st.trustedSince.IsZero() {
		delete(s.Annotations, annotationTrustedSince)
	} else {
		s.Annotations[annotationTrustedSince] = st.trustedSince.UTC().Format(time.RFC3339Nano)
	}
}

// plan returns the next step of the rotation from st at now, and the state
// after it. With no step to take it returns stepNone and the pair to serve.
//
// The caller must have made the webhook configuration hold st.cas before
// calling plan: stepTrusted records that it does.
func plan(st state, opts Options, now time.Time) (step, state, *tls.Certificate, error) {
	serving, renewAt, err := st.serving.verify(st.cas, now)
	if err != nil {
		// Nothing servable: no overlap can save calls that fail already.
		fresh, err := generate(opts.Hosts, now, opts.Validity)
		if err != nil {
			return stepNone, st, nil, err
		}
		return stepReplace, state{
			serving: pair{certPEM: fresh.certPEM, keyPEM: fresh.keyPEM},
			cas:     append(unexpired(st.cas, now), parseCAs(fresh.caPEM)...),
		}, nil, nil
	}

	dropped := false
	if !st.next.empty() {
		next, _, err := st.next.verify(st.cas, now)
		if err == nil {
			err = covers(next, opts.Hosts)
		}
		switch {
		case err != nil:
			// Damaged, or issued for other hosts: stage another below.
			st.next, st.trustedSince, dropped = pair{}, time.Time{}, true
		case st.trustedSince.IsZero():
			st.trustedSince = now
			return stepTrusted, st, nil, nil
		case !now.Before(st.trustedSince.Add(opts.PropagationDelay)):
			// Keep every CA: replicas that have not read the Secret
			// since still serve the old pair, until it expires.
			st.serving, st.next, st.trustedSince = st.next, pair{}, time.Time{}
			return stepPromote, st, nil, nil
		default:
			return stepNone, st, serving, nil // waiting for the API servers
		}
	}

	if !now.Before(renewAt) || covers(serving, opts.Hosts) != nil {
		fresh, err := generate(opts.Hosts, now, opts.Validity)
		if err != nil {
			return stepNone, st, nil, err
		}
		st.next = pair{certPEM: fresh.certPEM, keyPEM: fresh.keyPEM}
		st.cas = append(unexpired(st.cas, now), parseCAs(fresh.caPEM)...)
		return stepStage, st, nil, nil
	}

	if kept := unexpired(st.cas, now); len(kept) != len(st.cas) {
		st.cas = kept
		return stepPruneCAs, st, nil, nil
	}
	if dropped {
		return stepDropNext, st, nil, nil
	}
	return stepNone, st, serving, nil
}

// String returns the step's name, for logs.
func (s step) String() string {
	if s == stepNone {
		return "none"
	}
	return string(s)
}
