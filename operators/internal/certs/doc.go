// Package certs provides the TLS serving certificate of an operator's
// webhooks (admission and conversion), in one of two modes.
//
// # Self-signed, shared through a Secret, rotated without a refused call
//
// A Rotator keeps a self-signed CA and a serving certificate signed by it in
// a Secret of type kubernetes.io/tls (keys tls.crt, tls.key and ca.crt), and
// copies the CA bundle ca.crt into the caBundle of every webhook of a
// ValidatingWebhookConfiguration. Its GetCertificate serves the pair last
// read from the Secret, and Run reads it again every SyncInterval.
//
// Why a Secret and not a certificate generated in memory: the operator runs
// several replicas behind one Service, and the API server may call any of
// them while trusting only the CAs written in the webhook configuration. The
// first replica to start writes the Secret; the others find it and reuse it.
// Every write is made at the resourceVersion read, so when two replicas race
// to create or change it, the loser reads the winner's Secret and carries on
// from it: two replicas never both issue a certificate.
//
// The webhook's failurePolicy is Fail, so the invariant is: at every moment,
// every certificate any replica serves is signed by a CA in the caBundle the
// API servers use. A renewal that replaced the CA at once would break it:
// the other replicas keep serving the old certificate until they read the
// Secret again, and the API servers only trust the new CA once their
// informers see the configuration change. So a certificate changes in
// steps, each a write of the Secret by whichever replica sees it due:
//
//  1. Stage. Once the served certificate (or its CA) enters the last third
//     of its validity, or does not cover the requested hosts, a new CA and
//     a certificate signed by it are stored as next.crt and next.key, and
//     the new CA is added to ca.crt. Nothing serves the new certificate yet.
//  2. Trust. A replica that has made the webhook configuration hold that
//     bundle records the time in the annotation
//     certs.kooperkit.io/next-trusted-since.
//  3. Promote. PropagationDelay later, when every API server has the new
//     caBundle, next becomes tls.crt and tls.key. The old CA stays in
//     ca.crt: replicas serve the old certificate until their next read,
//     at most SyncInterval later, and it is still trusted meanwhile.
//  4. Prune. Once the old CA has expired, no certificate it signed can be
//     served any more, and it is dropped from ca.crt.
//
// ca.crt thus holds the current CA and, from staging until its expiry, one
// other; every bundle it holds keeps the newest CA. So a replica that read
// the Secret before another changed it, and finds in the webhook
// configuration an unexpired CA issued after all of its own, leaves that
// newer bundle alone: a CA, once trusted, stays trusted until it expires.
// (The configuration carries nothing else from us: a ValidatingAdmissionPolicy
// lets the operator change its caBundle only.) Options.validate makes sure
// the steps fit in the last third of the validity: PropagationDelay plus
// three SyncIntervals.
//
// Consequences. The replicas' clocks must agree to well within
// PropagationDelay, which must exceed the time the API servers take to see
// a configuration change (seconds). A replica that cannot read the Secret
// for the last third of the validity serves an expired certificate. Only a
// Secret with nothing servable (missing, damaged, expired, not signed by
// its ca.crt) is replaced at once, and calls fail until the API servers see
// the new CA, as at installation. Replicas must request the same hosts: two
// that disagree keep staging certificates for each other (safely, but
// without end).
//
// # Files from cert-manager
//
// FileLoader serves a key pair from files, such as a cert-manager Certificate
// mounted from its Secret, and reloads it when either file changes, so
// cert-manager rotations are picked up live, without a restart. Injecting the
// CA into the webhook configuration is then cert-manager's job (its
// cainjector), not this package's.
//
// # RBAC
//
// A Rotator needs, in the operator's namespace, get, create and update on
// secrets. get and update can be limited with resourceNames to the Secret's
// name; create cannot (the name of an object being created is not known at
// authorization time), so create is granted on every Secret of that
// namespace. To inject the CA, it also needs get and update on
// validatingwebhookconfigurations (admissionregistration.k8s.io, cluster
// scoped, so in a ClusterRole), limited with resourceNames to the
// configuration's name; and for a CRD's conversion webhook (Options.CRDName),
// get and update on that customresourcedefinition (apiextensions.k8s.io),
// limited the same way. FileLoader needs no RBAC.
//
// Serving chooses between the two modes for a webhook server.
package certs
