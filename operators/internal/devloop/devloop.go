// Package devloop lets an operator run from a shell serve its admission
// webhook to the API server of `make devcluster` (hack/devcluster), which no
// Service leads to it, with no flag beyond -kubeconfig.
//
// The dev cluster writes, next to its kubeconfig (.devcluster/kubeconfig),
// the directory webhook/: a serving certificate for 127.0.0.1, ::1 and
// localhost (tls.crt, tls.key) and the CA that signed it (ca.crt), made for
// each start. An operator run with -kubeconfig pointing there:
//
//  1. finds that directory with [CertDir], which also makes sure the
//     kubeconfig's API server is on this machine;
//  2. serves its webhook with that certificate on a loopback address
//     ([LoopbackAddr]: ":9443" becomes "127.0.0.1:9443");
//  3. registers it with [Register]: the same webhook configuration its
//     manifests install, with a URL (https://127.0.0.1:9443/<path>) instead
//     of a Service and the dev cluster's CA as caBundle;
//  4. for a kind with more than one version, points the CRD's conversion
//     webhook at the same server with [PointConversion], and puts the
//     CRD's conversion back when it stops.
//
// Consequences. The registration lasts as long as the operator: it is
// deleted when the operator stops, so while it is stopped (edit, run
// again) the API server admits what the webhook would refuse, as on a
// cluster without the webhook installed, and the operator's own checks
// must catch it. An operator that was killed leaves its registration, and
// with failurePolicy Fail the API server refuses what it covers ("connection
// refused") until the operator runs again and replaces it, or the
// configuration is deleted. A second operator registering the same
// configuration takes it over; the first then leaves it in place when it
// stops. Deployed operators never get here: in a pod -kubeconfig is empty,
// and a kubeconfig whose API server is on another machine is never taken
// for a dev cluster's, whatever is next to it.
package devloop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The files of the dev cluster's webhook directory, as hack/devcluster
// writes them (its integration test runs an operator against them).
const (
	// WebhookDir is the directory next to the kubeconfig.
	WebhookDir = "webhook"
	// CAFile holds the CA that signed CertFile, for the caBundle.
	CAFile = "ca.crt"
	// CertFile and KeyFile are the serving certificate and its key.
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// CertDir returns the dev cluster's webhook directory next to kubeconfig,
// when it holds CAFile, CertFile and KeyFile and the API server of cfg (the
// client config loaded from kubeconfig) is on a loopback address: only then
// can it call a webhook on 127.0.0.1 of this machine. Otherwise it returns
// "": an empty kubeconfig (in a pod), or a cluster that is not a dev
// cluster. It returns an error only when the files are there but cannot be
// read.
func CertDir(kubeconfig string, cfg *rest.Config) (string, error) {
	if kubeconfig == "" || cfg == nil || !loopbackServer(cfg.Host) {
		return "", nil
	}
	dir := filepath.Join(filepath.Dir(kubeconfig), WebhookDir)
	for _, name := range []string{CAFile, CertFile, KeyFile} {
		_, err := os.Stat(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("could not read the dev cluster's webhook certificate: %w", err)
		}
	}
	return dir, nil
}

// loopbackServer reports whether host, a rest.Config's Host (a URL, or
// host[:port]), names a loopback IP address or localhost.
func loopbackServer(host string) bool {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		if u, err = url.Parse("https://" + host); err != nil {
			return false
		}
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ErrNotLoopback is wrapped by LoopbackAddr's error for an address that
// names a host other than a loopback IP address.
var ErrNotLoopback = errors.New("not a loopback address")

// LoopbackAddr returns the address to serve a webhook on in the dev loop:
// addr with no host ("", as in ":9443") gets 127.0.0.1, where the dev
// cluster's API server calls it and nothing else reaches it; a loopback IP
// address is kept; any other host is an error wrapping ErrNotLoopback.
func LoopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("could not parse the webhook address %q: %w", addr, err)
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%w: the dev cluster calls the webhook on this machine, so %q must listen on 127.0.0.1 or ::1", ErrNotLoopback, addr)
	}
	return addr, nil
}

// URL returns the webhook's https URL at addr, as serving it reported it
// ("127.0.0.1:9443", "[::1]:9443"), and path.
func URL(addr, path string) string {
	return (&url.URL{Scheme: "https", Host: addr, Path: path}).String()
}

// Register creates the webhook configuration vwc, or replaces the one of
// that name, and returns a function that deletes it, to call once the
// webhook stops serving, with a context of its own (the one Register got
// is usually done by then). The delete is made at the resourceVersion
// Register wrote: a configuration that another process has taken over since
// stays.
func Register(ctx context.Context, client admissionregistrationv1client.ValidatingWebhookConfigurationInterface, vwc *admissionregistrationv1.ValidatingWebhookConfiguration) (unregister func(context.Context) error, err error) {
	written, err := client.Create(ctx, vwc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Left by an operator that was killed, or held by another one:
		// this one serves from now on.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			held, err := client.Get(ctx, vwc.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			update := vwc.DeepCopy()
			update.ResourceVersion = held.ResourceVersion
			written, err = client.Update(ctx, update, metav1.UpdateOptions{})
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("could not register validatingwebhookconfiguration %s: %w", vwc.Name, err)
	}
	unregister = func(ctx context.Context) error {
		err := client.Delete(ctx, written.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &written.UID, ResourceVersion: &written.ResourceVersion},
		})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			return nil // taken over since: the other process deletes it
		}
		return fmt.Errorf("could not unregister validatingwebhookconfiguration %s: %w", written.Name, err)
	}
	return unregister, nil
}

// PointConversion points the conversion webhook of the
// CustomResourceDefinition crd at clientConfig (a URL and the dev cluster's
// CA), and returns a function that puts back the conversion it replaced,
// to call once the webhook stops serving, with a context of its own. The
// CRD must exist: its schema comes from the manifests, not from here.
//
// Putting the conversion back matters: while a CRD names a webhook that
// nothing serves, reads and writes of every version but the stored one
// fail, and a client-side kubectl apply of the manifests over a CRD left
// with a URL sets their Service beside it, which the API server refuses.
// As with Register, a CRD whose conversion another process has changed
// since is left as it is.
func PointConversion(ctx context.Context, client apiextensionsv1client.CustomResourceDefinitionInterface, crd string, clientConfig apiextensionsv1.WebhookClientConfig) (restore func(context.Context) error, err error) {
	var before, written *apiextensionsv1.CustomResourceConversion
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		held, err := client.Get(ctx, crd, metav1.GetOptions{})
		if err != nil {
			return err
		}
		before = held.Spec.Conversion.DeepCopy()
		held.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             clientConfig.DeepCopy(),
				ConversionReviewVersions: []string{"v1"},
			},
		}
		updated, err := client.Update(ctx, held, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		written = updated.Spec.Conversion
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("could not point the conversion webhook of customresourcedefinition %s here: %w", crd, err)
	}
	restore = func(ctx context.Context) error {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			held, err := client.Get(ctx, crd, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !sameClient(held.Spec.Conversion, written) {
				return nil // pointed elsewhere since: that process restores it
			}
			held.Spec.Conversion = before
			_, err = client.Update(ctx, held, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("could not put back the conversion of customresourcedefinition %s: %w", crd, err)
		}
		return nil
	}
	return restore, nil
}

// sameClient reports whether two conversions call the same webhook URL.
func sameClient(a, b *apiextensionsv1.CustomResourceConversion) bool {
	url := func(c *apiextensionsv1.CustomResourceConversion) string {
		if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil {
			return ""
		}
		return ptr.Deref(c.Webhook.ClientConfig.URL, "")
	}
	return url(a) != "" && url(a) == url(b)
}
