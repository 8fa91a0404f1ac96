// Package certs provides the TLS serving certificate of the pod-terminator's
// validating admission webhook, in one of two modes.
//
// # Self-signed, shared through a Secret
//
// Ensure keeps a self-signed CA and a serving certificate signed by it in a
// Secret of type kubernetes.io/tls (keys tls.crt, tls.key and ca.crt), and
// can copy the CA into the caBundle of every webhook of a
// ValidatingWebhookConfiguration.
//
// Why a Secret and not a certificate generated in memory: the operator runs
// several replicas behind one Service, and the API server may call any of
// them while trusting the single CA written in the webhook configuration. So
// every replica must serve a certificate signed by that one CA. The first
// replica to start writes the Secret; the others find it and reuse it. When
// two replicas race to create it, the loser reads and uses the winner's;
// when two race to renew it, the optimistic concurrency of the API server
// (resourceVersion) makes one of them start over and reuse the other's.
//
// A stored certificate is reused while it parses, matches its key, is signed
// by ca.crt, covers every requested host and is not in the last third of its
// validity. Otherwise Ensure generates a new CA and certificate (ECDSA P-256)
// and replaces the Secret's contents.
//
// Consequence: the certificate is checked, and renewed, only when Ensure
// runs, that is at startup. A long-running operator is not rotated on its
// own; restart it (a rollout, once a year with the default validity of 365
// days) or delete the Secret and restart it to force a new certificate.
// A replica that keeps running after another one renewed the Secret still
// serves the old certificate, which the new caBundle no longer trusts:
// restart every replica after a renewal (a rollout does).
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
// Ensure needs, in the operator's namespace, get, create and update on
// secrets. get and update can be limited with resourceNames to the Secret's
// name; create cannot (the name of an object being created is not known at
// authorization time), so create is granted on every Secret of that
// namespace. To inject the CA, it also needs get and update on
// validatingwebhookconfigurations (admissionregistration.k8s.io, cluster
// scoped, so in a ClusterRole), limited with resourceNames to the
// configuration's name. FileLoader needs no RBAC.
package certs
