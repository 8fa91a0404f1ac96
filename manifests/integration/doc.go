// Package integration checks manifests/ the way users deploy it: each
// operator's kustomization renders with kubectl's built-in kustomize,
// installs that operator only (its own CRDs, RBAC, a hardened Deployment,
// Services, its webhook) and is accepted by a real API server (server-side
// dry run); an image set with make deploy IMG=... changes the image and
// nothing else; and make deploy / make undeploy install and remove an
// operator on a local control plane (hack/envtest), custom resources
// first, while the operator can still finalize them, without touching the
// other operators. TestTheOperatorsRunAsTheirDeploymentsSay runs every
// operator from its image, two replicas each, exactly as its Deployment
// says, on a node whose pods are processes (package procnode), and shows
// that four broken manifests are caught.
//
// The operators are the directories of manifests/ with a deployment.yaml.
// What only one operator's tests need (what exactly it renders, the
// examples of its docs, the object its webhook refuses) is in a file named
// after it, which registers it (register) and goes with the operator. It
// has no non-test code; the tests run in `make test`.
package integration
