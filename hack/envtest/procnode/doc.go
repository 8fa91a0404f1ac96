// Package procnode registers a node with a local control plane and runs
// the pods bound to it as processes on this machine, as far as a process
// can be a container: so that a test runs an operator exactly as its
// Deployment says, without Docker, kind or a kubelet.
//
//	node, err := procnode.Start(ctx, procnode.Options{
//		Config: cluster.Config(),
//		Images: map[string]procnode.Image{"ghcr.io/kooperkit/pod-terminator:v1": {Tarball: "bin/images/pod-terminator.tar"}},
//	})
//	if err != nil { ... }
//	defer node.Stop(ctx)
//
// The scheduler binds pods to the node (it is Ready, with the machine's
// CPUs and memory, and renews its Lease); a Deployment's ReplicaSet makes
// them. For each pod the node does what the kubelet does, with these
// means:
//
//   - Network: a network namespace per pod with its own address on the
//     node's bridge (a /24 of 10.200.0.0/13), so that two replicas listen
//     on the same ports, probes and the API server (a webhook Service's
//     EndpointSlice) reach the pod's address, and a forwarder in the
//     namespace serves the API server at the kubernetes Service's cluster
//     IP and port, as kube-proxy would: KUBERNETES_SERVICE_HOST works.
//   - Host name: a UTS namespace per process, named after the pod.
//   - File system: the container's image unpacked (Options.Images: no
//     pulls) and the process chrooted into it, with its volumes written in
//     at their mount paths: the ServiceAccount token from the TokenRequest
//     API, bound to the pod, renewed at 80% of its life; ConfigMaps,
//     Secrets, downward API files; emptyDir directories. /etc/hosts,
//     /etc/hostname and the /dev character devices are added. The files are
//     root's, so a non-root container cannot write outside an emptyDir, as
//     with readOnlyRootFilesystem. Nothing an image holds leads a write out
//     of its root: layers are unpacked through an os.Root (an entry beneath
//     a link out, or named with "..", is refused), and the node's own
//     writes resolve links as the container sees them, an absolute link
//     from the container's root, refusing one that climbs out.
//   - Process: the container's command and args (or its image's entrypoint
//     and cmd) with $(VAR) expanded, the environment in the kubelet's order
//     (image, Service links, envFrom, env with fieldRef, resourceFieldRef
//     and key references), its securityContext's (or image's) numeric user
//     and group, runAsNonRoot checked, restarted per restartPolicy with the
//     kubelet's back-off; its output in a log file per process
//     (ContainerLogs).
//   - Probes: startup, liveness and readiness, httpGet and tcpSocket, with
//     their delays, periods, timeouts and thresholds; a failed liveness or
//     startup probe kills and restarts the container, readiness drives the
//     pod's Ready condition. Unhealthy, Killing, BackOff and Started Events
//     are recorded as the kubelet records them.
//   - Deletion: SIGTERM, SIGKILL after the grace period, then the pod is
//     deleted from the API server.
//
// What it does not do, said plainly: resource limits are not enforced (no
// cgroups: GOMEMLIMIT from a resourceFieldRef is set, the limit itself is
// not), capabilities, seccomp and no_new_privs are not applied (a non-root
// user has no capabilities anyway), exec and gRPC probes, init containers,
// lifecycle hooks, host namespaces, subPath and other volume kinds are
// reported as unsupported (the container waits with
// CreateContainerConfigError, and a Warning Event says why), and
// NetworkPolicies are not enforced.
//
// It needs Linux and root (network namespaces, veth, chroot), and no other
// program: it sets the network up over netlink itself. Without them Start
// returns an error wrapping ErrUnsupported that says what is missing. The
// processes die with the process that started them; a killed test's
// bridges and namespaces, named after its PID, are removed by the next
// Start.
package procnode

import (
	"errors"
	"io"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// ErrUnsupported is wrapped by errors about what this node cannot do: a
// machine other than Linux, a process not run as root, or a pod feature it
// does not run.
var ErrUnsupported = errors.New("procnode: unsupported")

// Options configure a Node.
type Options struct {
	// Name of the Node object. Default "procnode".
	Name string
	// Config reaches the API server with the rights of a kubelet and more
	// (an admin's): the node registers itself, writes pod status, requests
	// ServiceAccount tokens, reads ConfigMaps and Secrets. Required.
	Config *rest.Config
	// Images are the images the node has, by the reference a container
	// names. A container naming another waits with ErrImageNeverPull.
	Images map[string]Image
	// Dir holds the images, the pods' file systems and the logs. Default: a
	// new temporary directory, removed by Stop.
	Dir string
	// Log receives a line per thing the node does (a container started,
	// exited, a probe failed). Default: nothing.
	Log io.Writer
}

// ContainerLog is where one container's output is: a file per process in
// Dir, 1.log, then 2.log after a restart, and so on. Stop removes the
// files of a node whose Dir Start made.
type ContainerLog struct {
	Namespace, Pod string
	UID            types.UID
	Container      string
	Dir            string
}
