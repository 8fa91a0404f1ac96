package conversion

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/health"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/certs"
	"github.com/kooperkit/kooper/operators/internal/devloop"
)

// ErrInvalidServer is wrapped by Serve's error about an incomplete Server.
var ErrInvalidServer = errors.New("invalid conversion webhook server")

// Server is the conversion webhook server of an operator whose one webhook
// is its CRD's conversion: Handler at Path over TLS, in every replica. (An
// operator that serves an admission webhook too serves Handler beside it,
// on one server, as the pod-terminator does.)
type Server struct {
	// Addr is the HTTPS address, e.g. ":9443". Required.
	Addr string
	// CertDir holds tls.crt and tls.key (a cert-manager Secret mounted as
	// files), reloaded when they change. Empty: a self-signed certificate
	// kept in the Secret SecretName, whose CA every replica writes into
	// the CRD's conversion webhook (certs.Rotator).
	CertDir string
	// Register is the dev loop (operators/internal/devloop), where no
	// Service leads to this process: Addr without a host gets 127.0.0.1,
	// and the CRD's conversion webhook is pointed at it, with the CA
	// CertDir/ca.crt, until Serve's stop puts it back. Requires CertDir.
	Register bool
	// Namespace and SecretName name the Secret of the self-signed
	// certificate, which covers Hosts (the Service's name,
	// "<service>.<namespace>.svc"). Required without CertDir.
	Namespace, SecretName string
	Hosts                 []string
	// CRDName is the CustomResourceDefinition whose conversion is served,
	// e.g. "webapps.webapps.example.com". Required.
	CRDName string
	// Kube and CRDs are the clients of the certificate's Secret and of the
	// CRD. Required.
	Kube kubernetes.Interface
	CRDs apiextensionsclient.Interface
	// Convert converts the CRD's objects between its versions, e.g.
	// Between's. Required.
	Convert Func
	// Logger receives the server's logs. Default log.Noop.
	Logger log.Logger
}

// unregisterTimeout bounds putting the CRD's conversion back when the
// server stops.
const unregisterTimeout = 10 * time.Second

// Serve starts serving s until stop is called, and returns the address it
// listens on. stop puts the CRD's conversion back first (Register), then
// stops the server and the certificate's rotation, and returns when they
// have.
func Serve(ctx context.Context, s Server) (addr string, stop func(), _ error) {
	if s.Logger == nil {
		s.Logger = log.Noop
	}
	switch {
	case s.Addr == "" || s.CRDName == "" || s.Kube == nil || s.CRDs == nil || s.Convert == nil:
		return "", nil, fmt.Errorf("%w: Addr, CRDName, Kube, CRDs and Convert are required", ErrInvalidServer)
	case s.Register && s.CertDir == "":
		return "", nil, fmt.Errorf("%w: Register needs CertDir, with the CA the webhook's certificate is checked against", ErrInvalidServer)
	}
	if s.Register {
		// Only this machine's API server calls it, and nothing else
		// should reach it.
		var err error
		if s.Addr, err = devloop.LoopbackAddr(s.Addr); err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrInvalidServer, err)
		}
	}
	tlsConfig, stopCerts, err := certs.Serving(ctx, s.CertDir, certs.Options{
		Client: s.Kube, Namespace: s.Namespace, SecretName: s.SecretName, Hosts: s.Hosts,
		CRDClient: s.CRDs, CRDName: s.CRDName, Logger: s.Logger,
	})
	if err != nil {
		return "", nil, fmt.Errorf("could not set up the conversion webhook's certificate: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, Handler(s.Convert, s.Logger))
	srv, err := health.ServeTLS(s.Addr, mux, tlsConfig, s.Logger)
	if err != nil {
		stopCerts()
		return "", nil, err
	}
	stop = func() { srv.Stop(); stopCerts() }
	s.Logger.Info("serving the conversion webhook", "addr", srv.Addr(), "path", Path, "crd", s.CRDName)
	if !s.Register {
		return srv.Addr(), stop, nil
	}
	restore, err := Register(ctx, s.CRDs, s.CRDName, s.CertDir, srv.Addr(), s.Logger)
	if err != nil {
		stop()
		return "", nil, err
	}
	return srv.Addr(), func() { restore(); stop() }, nil
}

// Register points the conversion webhook of the CRD crdName at the server
// at addr, with the CA certDir/ca.crt, for an API server that no Service
// leads here (the dev loop, operators/internal/devloop), and returns what
// puts the CRD's conversion back as it was: call it before the server
// stops. A failure to put it back is logged: the next run points it here
// again.
func Register(ctx context.Context, crds apiextensionsclient.Interface, crdName, certDir, addr string, logger log.Logger) (restore func(), _ error) {
	caFile := filepath.Join(certDir, devloop.CAFile)
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("could not read the conversion webhook's CA bundle %s: %w", caFile, err)
	}
	url := devloop.URL(addr, Path)
	put, err := devloop.PointConversion(ctx, crds.ApiextensionsV1().CustomResourceDefinitions(), crdName,
		apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: ca})
	if err != nil {
		return nil, err
	}
	logger.Info("registered the conversion webhook", "crd", crdName, "url", url)
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unregisterTimeout)
		defer cancel()
		if err := put(ctx); err != nil {
			logger.Warn("could not put the CRD's conversion back", "crd", crdName, "err", err)
			return
		}
		logger.Info("put the CRD's conversion back", "crd", crdName)
	}, nil
}

// ReadyWhileServing is the readiness of a replica that serves a conversion
// webhook: ready's status, and ready whether or not its controller has
// synced (the status then says why not). Every read of an object stored in
// a version other than the one asked for goes through a replica's
// conversion webhook, the controller's own list included: were a replica
// not ready until its controller synced, the Service would route
// conversions to no replica, and no controller could ever sync (a deadlock
// seen in an upgrade, while objects were stored in the old version).
func ReadyWhileServing(ready func() (string, error)) func() (string, error) {
	return func() (string, error) {
		status, err := ready()
		if err != nil {
			return "serving the webhooks; " + err.Error(), nil //nolint:nilerr // ready: the reason goes in the status
		}
		return status, nil
	}
}
