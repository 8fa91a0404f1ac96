package devloop_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/operators/internal/devloop"
)

// The dev loop is on only for a kubeconfig with the dev cluster's webhook
// directory next to it, complete, and an API server on this machine.
func TestCertDir(t *testing.T) {
	all := []string{devloop.CAFile, devloop.CertFile, devloop.KeyFile}
	tests := []struct {
		name   string
		files  []string // written in <kubeconfig dir>/webhook
		server string
		noPath bool // -kubeconfig empty, as in a pod
		want   bool // the webhook directory, else ""
	}{
		{name: "make devcluster's files and API server", files: all, server: "https://127.0.0.1:35123", want: true},
		{name: "an API server on ::1", files: all, server: "https://[::1]:6443", want: true},
		{name: "an API server on localhost", files: all, server: "https://localhost:6443", want: true},
		{name: "a server without a scheme", files: all, server: "127.0.0.1:6443", want: true},
		{name: "a remote API server: never registered there", files: all, server: "https://10.0.0.1:6443"},
		{name: "a remote API server by name", files: all, server: "https://prod.example.com"},
		{name: "no webhook directory: an ordinary kubeconfig", server: "https://127.0.0.1:6443"},
		{name: "no CA", files: []string{devloop.CertFile, devloop.KeyFile}, server: "https://127.0.0.1:6443"},
		{name: "no key", files: []string{devloop.CAFile, devloop.CertFile}, server: "https://127.0.0.1:6443"},
		{name: "no -kubeconfig: in a pod", files: all, server: "https://127.0.0.1:6443", noPath: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			kubeconfig := filepath.Join(dir, "kubeconfig")
			webhook := filepath.Join(dir, devloop.WebhookDir)
			if err := os.Mkdir(webhook, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(webhook, f), []byte("pem"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.noPath {
				kubeconfig = ""
			}
			want := ""
			if tt.want {
				want = webhook
			}
			got, err := devloop.CertDir(kubeconfig, &rest.Config{Host: tt.server})
			if err != nil || got != want {
				t.Errorf("got %q, %v, want %q", got, err, want)
			}
		})
	}
}

func TestLoopbackAddr(t *testing.T) {
	tests := []struct {
		addr, want string
		wantErr    error
	}{
		{addr: ":9443", want: "127.0.0.1:9443"},
		{addr: ":0", want: "127.0.0.1:0"},
		{addr: "127.0.0.1:9443", want: "127.0.0.1:9443"},
		{addr: "[::1]:9443", want: "[::1]:9443"},
		{addr: "0.0.0.0:9443", wantErr: devloop.ErrNotLoopback},
		{addr: "192.168.1.10:9443", wantErr: devloop.ErrNotLoopback},
		{addr: "localhost:9443", wantErr: devloop.ErrNotLoopback},
		{addr: "9443"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := devloop.LoopbackAddr(tt.addr)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("got %q, want an error", got)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("got %v, want %v", err, tt.wantErr)
			case tt.want != "" && (err != nil || got != tt.want):
				t.Errorf("got %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

func TestURL(t *testing.T) {
	tests := []struct{ addr, want string }{
		{addr: "127.0.0.1:9443", want: "https://127.0.0.1:9443/validate/podterminators"},
		{addr: "[::1]:9443", want: "https://[::1]:9443/validate/podterminators"},
	}
	for _, tt := range tests {
		if got := devloop.URL(tt.addr, "/validate/podterminators"); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// configuration is a webhook configuration calling url.
func configuration(url string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kooper-pod-terminator", Labels: map[string]string{"app.kubernetes.io/name": "pod-terminator"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "podterminators.chaos.kooperkit.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: []byte("ca")},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// Register writes the configuration whether or not one of that name is
// there (left by an operator that was killed), and its unregister deletes
// what it wrote, at the resourceVersion it wrote.
func TestRegister(t *testing.T) {
	const url = "https://127.0.0.1:9443/validate/podterminators"
	tests := []struct {
		name      string
		existing  *admissionregistrationv1.ValidatingWebhookConfiguration
		deleteErr error // the API server's answer to the delete, if not the fake's
		wantKept  bool  // the configuration is still there after unregister
	}{
		{name: "none registered"},
		{name: "one left by a killed run, calling another port", existing: configuration("https://127.0.0.1:40000/validate/podterminators")},
		{name: "deleted meanwhile", deleteErr: apierrors.NewNotFound(schema.GroupResource{}, "kooper-pod-terminator")},
		{name: "taken over meanwhile: left in place", deleteErr: apierrors.NewConflict(schema.GroupResource{}, "kooper-pod-terminator", errors.New("precondition failed")), wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var objs []runtime.Object
			if tt.existing != nil {
				objs = append(objs, tt.existing)
			}
			client := fake.NewClientset(objs...)
			// The fake stores no UID or resourceVersion: set them as the
			// API server would, to see the delete's preconditions.
			writes := 0
			client.PrependReactor("*", "validatingwebhookconfigurations", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if o, ok := a.(interface{ GetObject() runtime.Object }); ok && (a.GetVerb() == "create" || a.GetVerb() == "update") {
					writes++
					m := o.GetObject().(metav1.Object)
					m.SetUID(types.UID("uid-1"))
					m.SetResourceVersion(strconv.Itoa(writes))
				}
				return false, nil, nil
			})
			var preconditions *metav1.Preconditions
			client.PrependReactor("delete", "validatingwebhookconfigurations", func(a k8stesting.Action) (bool, runtime.Object, error) {
				preconditions = a.(k8stesting.DeleteAction).GetDeleteOptions().Preconditions
				return tt.deleteErr != nil, nil, tt.deleteErr
			})
			configs := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()

			unregister, err := devloop.Register(ctx, configs, configuration(url))
			if err != nil {
				t.Fatal(err)
			}
			held, err := configs.Get(ctx, "kooper-pod-terminator", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := *held.Webhooks[0].ClientConfig.URL; got != url {
				t.Errorf("got URL %s registered, want %s", got, url)
			}
			if err := unregister(ctx); err != nil {
				t.Errorf("got %v from unregister, want nil", err)
			}
			want := metav1.Preconditions{UID: ptr.To(types.UID("uid-1")), ResourceVersion: ptr.To(held.ResourceVersion)}
			if preconditions == nil || *preconditions.UID != *want.UID || *preconditions.ResourceVersion != *want.ResourceVersion {
				t.Errorf("got delete preconditions %+v, want UID %s and resourceVersion %s", preconditions, *want.UID, *want.ResourceVersion)
			}
			_, err = configs.Get(ctx, "kooper-pod-terminator", metav1.GetOptions{})
			switch {
			case tt.wantKept && err != nil:
				t.Errorf("got %v after unregister, want the configuration kept", err)
			case tt.deleteErr == nil && !apierrors.IsNotFound(err):
				t.Errorf("got %v after unregister, want NotFound", err)
			}
		})
	}
}

// An error other than a lost race is the caller's to log.
func TestUnregisterReportsAFailedDelete(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	client.PrependReactor("delete", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("the API server is stopping")
	})
	unregister, err := devloop.Register(ctx, client.AdmissionregistrationV1().ValidatingWebhookConfigurations(), configuration("https://127.0.0.1:9443/"))
	if err != nil {
		t.Fatal(err)
	}
	err = unregister(ctx)
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("got %v, want the delete's error", err)
	}
}

// PointConversion points the CRD's conversion at the URL and puts back
// what was there, unless another process has pointed it elsewhere since.
func TestPointConversion(t *testing.T) {
	const crdName = "podterminators.chaos.kooperkit.io"
	url := "https://127.0.0.1:9443/convert"
	service := &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "kooper-pod-terminator", Name: "pod-terminator-webhook", Path: ptr.To("/convert")}},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	other := "https://127.0.0.1:40000/convert"
	tests := []struct {
		name      string
		before    *apiextensionsv1.CustomResourceConversion
		meanwhile *string // a URL another process points the CRD at
		want      *apiextensionsv1.CustomResourceConversion
	}{
		{name: "the manifests' Service: put back", before: service, want: service},
		{name: "no conversion: put back", before: nil, want: nil},
		{name: "taken over meanwhile: left in place", before: service, meanwhile: &other, want: &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &other}, ConversionReviewVersions: []string{"v1"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			crds := apiextensionsfake.NewClientset(&apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: crdName},
				Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Conversion: tt.before.DeepCopy()},
			}).ApiextensionsV1().CustomResourceDefinitions()

			restore, err := devloop.PointConversion(ctx, crds, crdName, apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: []byte("ca")})
			if err != nil {
				t.Fatal(err)
			}
			held, err := crds.Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := held.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || *c.Webhook.ClientConfig.URL != url || string(c.Webhook.ClientConfig.CABundle) != "ca" {
				t.Fatalf("got conversion %+v, want the webhook at %s with the CA", c, url)
			}
			if tt.meanwhile != nil {
				held.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: tt.meanwhile}
				if _, err := crds.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := restore(ctx); err != nil {
				t.Fatal(err)
			}
			after, err := crds.Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(after.Spec.Conversion, tt.want) {
				t.Errorf("got conversion %+v after restore, want %+v", after.Spec.Conversion, tt.want)
			}
		})
	}
}

// A CRD that is not there is an error: the manifests install it.
func TestPointConversionNeedsTheCRD(t *testing.T) {
	crds := apiextensionsfake.NewClientset().ApiextensionsV1().CustomResourceDefinitions()
	url := "https://127.0.0.1:9443/convert"
	_, err := devloop.PointConversion(context.Background(), crds, "podterminators.chaos.kooperkit.io", apiextensionsv1.WebhookClientConfig{URL: &url})
	if !apierrors.IsNotFound(err) {
		t.Errorf("got %v, want NotFound", err)
	}
}
