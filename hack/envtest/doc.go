// Package envtest starts a real, local Kubernetes control plane, this
// repository's envtest, for tests, `make run`, `make devcluster` and the
// benchmarks: etcd and kube-apiserver, optionally kube-controller-manager
// (garbage collection, ReplicaSets, namespaces, service account tokens) and
// kube-scheduler with kwok-simulated nodes, as separate processes on
// 127.0.0.1. No Docker, no kind, no downloaded binaries: the binaries are
// compiled from the Go module proxy by `make controlplane` (see
// hack/controlplane).
//
// It is test tooling, not the library: operators do not import it, their
// tests do. So it is a module of its own
// (github.com/kooperkit/kooper/hack/envtest, requiring Kubernetes' client
// libraries and netlink only), which the library's module requires for its
// tests alone (docs/modules.md).
//
//	cluster, err := envtest.Start(ctx, envtest.Options{ControllerManager: true})
//	if err != nil { ... }
//	defer cluster.Stop()
//	client := kubernetes.NewForConfigOrDie(cluster.Config())
//
// Start generates a throw-away PKI with crypto/x509 (a CA, serving and client
// certificates, the service account key pair), turns RBAC authorization on,
// waits until every component is ready (etcd about 1s, kube-apiserver about
// 3s idle), writes an admin kubeconfig (KubeconfigPath) and returns. Stop
// kills what Start started, by PID, and removes the temporary directory; on
// Linux the processes also die with the process that started them, so a
// killed test leaves nothing behind. StopAPIServer, StartAPIServer and
// RestartAPIServer are for fault tests; etcd's data survives them.
//
// Ports are picked free, but another process can take one before the
// component binds it (clusters start side by side): the component is then
// started again on others. Health checks tell a component from another
// process on its port: TLS components by the cluster's CA, etcd by its
// member name.
//
// One cluster is meant to be shared by a package's tests from TestMain (see
// [ForTests], [RunTests]): give each test its own namespace. A missing
// control plane fails the package instead of skipping it; `make test`
// builds it first.
//
// Binaries are found in Options.BinDir, else in the directory named by
// $KOOPER_CONTROLPLANE_BIN (for users outside this repository, who cannot
// `go install` a module with replace directives and build their own), else
// in the nearest bin/ above the working directory. Errors name what is
// missing and how to build it, and wrap [ErrBinariesMissing].
package envtest
