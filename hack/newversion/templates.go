package main

import "strings"

// render fills a template's «placeholders» with k's names.
func (k kind) render(tmpl string) string {
	nsArg, nsField := `"default"`, `, Namespace: "default"`
	nsRes, nsMap, keyNS := `.Namespace("default")`, `, "namespace": "default"`, "default/"
	if k.cluster {
		nsArg, nsField = "", ""
		nsRes, nsMap, keyNS = "", "", ""
	}
	return strings.NewReplacer(
		"«Name»", k.name, "«Namespace»", k.namespace, "«Short»", k.short, "«Group»", k.group,
		"«Kind»", k.Kind, "«plural»", k.plural, "«CRD»", k.crdName(),
		"«ClientGroup»", k.clientGroup, "«ClientPlural»", k.clientPlural,
		"«Old»", k.oldVersion, "«New»", k.newVersion, "«GoOld»", goVersion(k.oldVersion), "«GoNew»", goVersion(k.newVersion),
		"«OldAlias»", k.oldAlias, "«NewAlias»", k.newAlias(), "«OldPkg»", k.oldPkg(), "«NewPkg»", k.newPkg(),
		"«Module»", k.module, "«NSArg»", nsArg, "«NSField»", nsField,
		"«NSRes»", nsRes, "«NSMap»", nsMap, "«KeyNS»", keyNS,
	).Replace(tmpl)
}

// The old version's conversion functions: stubs that copy the metadata.
const conversionGo = `package «Old»

import (
	«NewAlias» "«NewPkg»"
)

// «New» is served beside «Old», the version stored until the storage
// switch (operators/«Name»/README.md, "Versions"). The API server asks the
// operator's conversion webhook to convert between them, which calls these
// two functions.
//
// Neither may fail on what a user wrote: a conversion that fails makes the
// object unreadable, in both versions, to everyone, the garbage collector
// included. What one version has no field for must survive a trip through
// the other, for example in an annotation that the way back reads and
// removes: conversion_test.go's round trips check it.

// ConvertTo converts in into dst, a «New» «Kind».
func (in *«Kind») ConvertTo(dst *«NewAlias».«Kind») {
	dst.TypeMeta = in.TypeMeta
	if dst.APIVersion != "" {
		dst.APIVersion = «NewAlias».SchemeGroupVersion.String()
	}
	in.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	// TODO(make new-version): convert the spec and the status, field by
	// field. While both versions hold the same fields, a conversion of
	// their types does it: uncomment these two lines.
	//
	// dst.Spec = «NewAlias».«Kind»Spec(*in.Spec.DeepCopy())
	// dst.Status = «NewAlias».«Kind»Status(*in.Status.DeepCopy())
}

// ConvertFrom converts src, a «New» «Kind», into in.
func (in *«Kind») ConvertFrom(src *«NewAlias».«Kind») {
	in.TypeMeta = src.TypeMeta
	if in.APIVersion != "" {
		in.APIVersion = SchemeGroupVersion.String()
	}
	src.ObjectMeta.DeepCopyInto(&in.ObjectMeta)
	// TODO(make new-version): convert the spec and the status back, field
	// by field, as ConvertTo does.
	//
	// in.Spec = «Kind»Spec(*src.Spec.DeepCopy())
	// in.Status = «Kind»Status(*src.Status.DeepCopy())
}
`

// The round trips, which fail until the conversion is written.
const conversionTestGo = `package «Old»_test

import (
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	«OldAlias» "«OldPkg»"
	«NewAlias» "«NewPkg»"
)

// «Old» to «New» to «Old», and «New» to «Old» to «New», give back the
// object, over 1,000 random objects of each version: what one version has
// no field for is kept, not lost. It fails until ConvertTo and ConvertFrom
// (conversion.go) convert the spec and the status.
func TestConversionRoundTrips(t *testing.T) {
	const n = 1000
	seed := time.Now().UnixNano()
	scheme := runtime.NewScheme()
	if err := errors.Join(«OldAlias».AddToScheme(scheme), «NewAlias».AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), serializer.NewCodecFactory(scheme)).NilChance(.3).NumElements(0, 3)
	lost := 0
	check := func(sent, back any) {
		if equality.Semantic.DeepEqual(sent, back) {
			return
		}
		if lost == 0 {
			t.Errorf("seed %d: the first object that came back different (-sent +back):\n%s", seed, cmp.Diff(sent, back))
		}
		lost++
	}
	for range n {
		var older, olderBack «OldAlias».«Kind»
		var through «NewAlias».«Kind»
		f.Fill(&older)
		older.ConvertTo(&through)
		olderBack.ConvertFrom(&through)
		check(&older, &olderBack)

		var newer, newerBack «NewAlias».«Kind»
		var between «OldAlias».«Kind»
		f.Fill(&newer)
		between.ConvertFrom(&newer)
		between.ConvertTo(&newerBack)
		check(&newer, &newerBack)
	}
	if lost > 0 {
		t.Errorf("seed %d: %d of %d objects came back different: write the conversion (conversion.go's TODOs)", seed, lost, 2*n)
	}
}
`

// The CRD's spec.conversion, which make generate copies beside the CRD.
const conversionYAML = `# How the API server converts «Kind»s between «Old» and «New»: it asks the
# «Name» operator's conversion webhook, which every replica serves, through
# the Service «Name»-webhook (manifests/«Name»/conversion_webhook.yaml).
# caBundle is left empty: the operator writes its CA here. make generate
# copies this patch beside the CRD (manifests/crds/«Short»/), whose
# kustomization applies it.
#
# While no replica answers, a «Kind» can be read and written in the stored
# version only.
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: «CRD»
spec:
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig:
        service:
          name: «Name»-webhook
          namespace: «Namespace»
          path: /convert
          port: 443
`

// The operator's conversion webhook: its settings and its start.
const operatorConversionGo = `package operator

import (
	"context"
	"fmt"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	«OldAlias» "«OldPkg»"
	«NewAlias» "«NewPkg»"
	"«Module»/operators/internal/conversion"
)

// The conversion webhook of the «Kind»'s versions, «Old» and «New»
// (apis/«Short»/conversion.yaml names it), shared with cmd/ and the
// manifests.
const (
	// CRDName is the «Kind»'s CustomResourceDefinition, into whose
	// conversion webhook the operator writes its CA.
	CRDName = "«CRD»"
	// DefaultConversionService is the Service in front of the webhook
	// (manifests/«Name»/conversion_webhook.yaml): the self-signed
	// certificate covers <service>.<namespace>.svc.
	DefaultConversionService = "«Name»-webhook"
	// DefaultConversionSecret holds the self-signed certificate
	// (manifests/rbac/«Name»/conversion_secret_role.yaml).
	DefaultConversionSecret = "«Name»-webhook-tls"
)

// ConversionWebhook configures the conversion webhook, which every replica
// serves, leader or not: while none answers, «Kind»s can be read and
// written in the stored version only, and the garbage collector and
// namespace deletion stop at them.
type ConversionWebhook struct {
	// Addr is the HTTPS address, e.g. ":9443". Empty: not served.
	Addr string
	// CertDir holds tls.crt and tls.key (a cert-manager Secret mounted as
	// files), reloaded when they change. Empty: a self-signed certificate
	// kept in the Secret DefaultConversionSecret, whose CA the operator
	// writes into the CRD.
	CertDir string
	// Register is the dev loop (operators/internal/devloop): the webhook
	// listens on 127.0.0.1 and points the CRD at itself, with the CA
	// CertDir/ca.crt, until the operator stops. Requires CertDir.
	Register bool
	// Hosts the self-signed certificate covers. Default
	// "<DefaultConversionService>.<Namespace>.svc".
	Hosts []string
}

// conversions converts «Kind»s between «Old» and «New» with the functions
// of apis/«Short»/«Old»/conversion.go.
var conversions = conversion.Between[«OldAlias».«Kind», «NewAlias».«Kind»](«OldAlias».SchemeGroupVersion, «NewAlias».SchemeGroupVersion)

// serveConversion serves the conversion webhook, unless cfg.Conversion.Addr
// is empty, and returns what stops it, and the replica's readiness: one
// that serves it is ready before its controller has synced, since that
// controller's own list may need it.
func serveConversion(ctx context.Context, cfg Config, restCfg *rest.Config, ready func() (string, error)) (stop func(), _ func() (string, error), _ error) {
	w := cfg.Conversion
	if w.Addr == "" {
		return func() {}, ready, nil
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("could not create the Kubernetes client of the conversion webhook: %w", err)
	}
	crds, err := apiextensionsclient.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("could not create the CRD client of the conversion webhook: %w", err)
	}
	hosts := w.Hosts
	if len(hosts) == 0 {
		hosts = []string{DefaultConversionService + "." + cfg.Namespace + ".svc"}
	}
	_, stop, err = conversion.Serve(ctx, conversion.Server{
		Addr: w.Addr, CertDir: w.CertDir, Register: w.Register,
		Namespace: cfg.Namespace, SecretName: DefaultConversionSecret, Hosts: hosts,
		CRDName: CRDName, Kube: kube, CRDs: crds, Convert: conversions, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	return stop, conversion.ReadyWhileServing(ready), nil
}
`

// What operator.go, main.go and the integration tests gain, at their
// markers.
const (
	operatorConfigField = `	// Conversion configures the conversion webhook of the «Kind»'s
	// versions (conversion.go). Empty Addr: not served.
	Conversion ConversionWebhook
`
	operatorServe = `	stopConversion, ready, err := serveConversion(ctx, cfg, obs.REST, ready)
	if err != nil {
		return err
	}
	defer stopConversion()
`
	mainFlags = `		convAddr    = fs.String("conversion-webhook-addr", ":9443", "HTTPS address of the conversion webhook of the «Kind»'s versions, which every replica serves; empty disables it (then only the stored version can be read)")
		convCertDir = fs.String("conversion-webhook-cert-dir", "", "directory with tls.crt and tls.key (e.g. from cert-manager); empty: make devcluster's next to -kubeconfig, served on 127.0.0.1 and pointed at by the operator, else a self-signed certificate kept in a Secret")
		convService = fs.String("conversion-webhook-service", operator.DefaultConversionService, "Service in front of the conversion webhook: the self-signed certificate covers <service>.<namespace>.svc")
`
	mainSetup = `	// The dev loop: make devcluster's certificate, and no Service, so the
	// operator points the CRD's conversion webhook at itself.
	convDir, convRegister := *convCertDir, false
	if convDir == "" {
		if convDir, err = devloop.CertDir(*kubeconfig, restConfig); err != nil {
			return err
		}
		convRegister = convDir != ""
	}
`
	mainConfig = `		Conversion: operator.ConversionWebhook{
			Addr: *convAddr, CertDir: convDir, Register: convRegister,
			Hosts: []string{*convService + "." + *namespace + ".svc"},
		},
`
)

// The integration tests of both versions, and of the webhook's RBAC.
const versionsTestGo = `package integration_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"«Module»/apis/client/clientset/versioned"
	«NewAlias» "«NewPkg»"
	"«Module»/hack/migrate/storage"
	"«Module»/kooper/log"
	"«Module»/operators/internal/conversion"
	"«Module»/operators/internal/devloop"
	"«Module»/operators/internal/e2etest"
	"«Module»/operators/internal/rbactest"
	"«Module»/operators/«Name»/internal/operator"
)

// conversionWebhook points the «Kind» CRD's conversion webhook at a free
// address of this machine until the test ends, and returns the operator's
// settings serving it there: its self-signed certificate covers 127.0.0.1,
// and the operator writes its CA into the CRD, as in a cluster.
func conversionWebhook(t *testing.T) operator.ConversionWebhook {
	t.Helper()
	kubectl(t, "apply", "-k", crdDir)
	kubectl(t, "apply", "-k", rbacDir)
	addr := e2etest.FreeAddr(t)
	url := devloop.URL(addr, conversion.Path)
	crds := apiextensionsclient.NewForConfigOrDie(cluster.Config()).ApiextensionsV1().CustomResourceDefinitions()
	restore, err := devloop.PointConversion(context.Background(), crds, operator.CRDName, apiextensionsv1.WebhookClientConfig{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	// After the operator has stopped: t.Cleanup runs last what was
	// registered first.
	t.Cleanup(func() {
		if err := restore(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return operator.ConversionWebhook{Addr: addr, Hosts: []string{"127.0.0.1"}}
}

// The API server serves «Old» and «New», converting between them with the
// operator's conversion webhook, whichever it stores (make store-version
// switches): a «Kind» written in either version reads the same in the
// other, a list converts every object, and the operator handles one
// written in «New».
func TestBothVersionsServeTheSameObjects(t *testing.T) {
	ctx := context.Background()
	cfg := operator.Config{
		REST:       e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100),
		Conversion: conversionWebhook(t),
		Logger:     log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	clients := versioned.NewForConfigOrDie(cluster.Config())
	older, newer := clients.«ClientGroup»«GoOld»().«ClientPlural»(«NSArg»), clients.«ClientGroup»«GoNew»().«ClientPlural»(«NSArg»)
	name := "versions-" + rand.String(5)
	t.Cleanup(func() { _ = older.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	sent := &«NewAlias».«Kind»{ObjectMeta: metav1.ObjectMeta{Name: name«NSField»}}
	sent.Spec.Greeting = "written in «New»"
	// Once the operator serves the webhook, and has written its CA into
	// the CRD, a «Kind» written in one version reads in the other.
	var written *«NewAlias».«Kind»
	e2etest.Eventually(t, 60*time.Second, "a «Kind» written in «New» reads in «Old», through the conversion webhook", func() bool {
		var err error
		if written == nil {
			if written, err = newer.Create(ctx, sent.DeepCopy(), metav1.CreateOptions{}); err != nil {
				written = nil
				return false
			}
		}
		_, err = older.Get(ctx, name, metav1.GetOptions{})
		return err == nil
	})
	if written.APIVersion != "" && written.APIVersion != «NewAlias».SchemeGroupVersion.String() {
		t.Errorf("written: apiVersion %s, want %s", written.APIVersion, «NewAlias».SchemeGroupVersion)
	}

	got, err := older.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != written.UID || got.Spec.Greeting != sent.Spec.Greeting {
		t.Fatalf("read in «Old»: uid %s, greeting %q; want %s, %q", got.UID, got.Spec.Greeting, written.UID, sent.Spec.Greeting)
	}
	// A read-modify-write in «Old», again from the read if the operator
	// wrote the status in between.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := older.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		o.Spec.Greeting = "written in «Old»"
		_, err = older.Update(ctx, o, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	back, err := newer.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.Greeting != "written in «Old»" {
		t.Errorf("written in «Old», read in «New»: greeting %q, want %q", back.Spec.Greeting, "written in «Old»")
	}
	list, err := newer.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Items, func(o «NewAlias».«Kind») bool { return o.UID == written.UID }) {
		t.Errorf("a list in «New» holds %d «Kind»s, not %s", len(list.Items), name)
	}
	// The operator's status, read in «New», is for the last generation.
	e2etest.Eventually(t, 60*time.Second, "the «Kind»'s status, read in «New», is for its last generation", func() bool {
		o, err := newer.Get(ctx, name, metav1.GetOptions{})
		return err == nil && o.Status.ObservedGeneration == o.Generation && len(o.Status.Conditions) > 0
	})
}

// Objects stored in the version the CRD does not store, as a cluster's are
// after an upgrade to a release that stores another (make store-version),
// move to the storage version when make migrate-storage runs
// (hack/migrate/storage): then etcd holds every one of them in that
// version, none lost and none changed, and the CRD's storedVersions names
// it alone, so the other version could leave the CRD. The test first
// stores them in the other version, as the release before did. It holds
// before and after make store-version.
func TestStoredObjectsMoveToTheStorageVersion(t *testing.T) {
	ctx := context.Background()
	// The operator serves the conversion: the migration reads every
	// object in the storage version.
	cfg := operator.Config{
		REST:       e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100),
		Conversion: conversionWebhook(t),
		Logger:     log.NewStd(t.Output(), log.StdOptions{Level: log.LevelWarn}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
	crds := apiextensionsclient.NewForConfigOrDie(cluster.Config()).ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, operator.CRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var storedVersion, other string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storedVersion = v.Name
		} else {
			other = v.Name
		}
	}
	if storedVersion == "" || other == "" || len(crd.Spec.Versions) != 2 {
		t.Fatalf("the CRD has the versions %+v: want two, one stored", crd.Spec.Versions)
	}
	const keys = "/registry/«Group»/«plural»/«KeyNS»"
	gvr := schema.GroupVersionResource{Group: "«Group»", Version: other, Resource: "«plural»"}
	res := dynamic.NewForConfigOrDie(cluster.Config()).Resource(gvr)«NSRes»

	// n objects, written while the other version is stored.
	e2etest.SetStorage(t, cluster.Config(), operator.CRDName, other)
	const n = 10
	var names []string
	for range n {
		name := "migrate-" + rand.String(6)
		names = append(names, name)
		o := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "«Kind»",
			"metadata": map[string]any{"name": name«NSMap»},
			"spec":     map[string]any{}, // its defaults
		}}
		e2etest.Eventually(t, 60*time.Second, name+" is written in "+other+", through the conversion webhook", func() bool {
			_, err := res.Create(ctx, o, metav1.CreateOptions{})
			if apierrors.IsInvalid(err) {
				t.Fatalf("%s is refused: %v", name, err)
			}
			return err == nil || apierrors.IsAlreadyExists(err)
		})
	}
	// The operator running, they go when the test ends.
	t.Cleanup(func() {
		for _, name := range names {
			_ = res.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
		e2etest.Eventually(t, 60*time.Second, "the test's «Kind»s are gone", func() bool {
			return len(e2etest.Stored(t, cluster.EtcdURL(), keys+"migrate-", true)) == 0
		})
	})
	// Once each is Ready, the operator has nothing more to write.
	read := func() map[string]map[string]any {
		t.Helper()
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]map[string]any{}
		for _, o := range list.Items {
			if slices.Contains(names, o.GetName()) {
				// What every write changes.
				unstructured.RemoveNestedField(o.Object, "metadata", "resourceVersion")
				unstructured.RemoveNestedField(o.Object, "metadata", "managedFields")
				got[o.GetName()] = o.Object
			}
		}
		return got
	}
	e2etest.Eventually(t, 90*time.Second, "each is Ready for its generation", func() bool {
		ready := 0
		for _, o := range read() {
			observed, _, _ := unstructured.NestedInt64(o, "status", "observedGeneration")
			generation, _, _ := unstructured.NestedInt64(o, "metadata", "generation")
			conditions, _, _ := unstructured.NestedSlice(o, "status", "conditions")
			for _, c := range conditions {
				if c, ok := c.(map[string]any); ok && c["type"] == "Ready" && c["status"] == "True" && observed == generation {
					ready++
				}
			}
		}
		return ready == n
	})
	e2etest.StoreAgain(t, res, cluster.EtcdURL(), keys, gvr.GroupVersion().String(), names...)
	e2etest.SetStorage(t, cluster.Config(), operator.CRDName, storedVersion)
	inStore := func() (inOther, inStored int) {
		for key, v := range e2etest.Stored(t, cluster.EtcdURL(), keys+"migrate-", true) {
			switch {
			case !slices.Contains(names, strings.TrimPrefix(key, keys)):
			case v == gvr.GroupVersion().String():
				inOther++
			case v == "«Group»/"+storedVersion:
				inStored++
			}
		}
		return inOther, inStored
	}
	// A skipped migration leaves these: were they not in the other
	// version now, the test would show nothing. The operator may still
	// write one or two (a handling under way), in the storage version.
	inOther, _ := inStore()
	t.Logf("before the migration, %d of the %d objects are stored in %s", inOther, n, other)
	if inOther < n-3 {
		t.Fatalf("before the migration, %d of the %d objects are stored in %s: want nearly all", inOther, n, other)
	}
	if crd, err = crds.Get(ctx, operator.CRDName, metav1.GetOptions{}); err != nil || !slices.Contains(crd.Status.StoredVersions, other) {
		t.Fatalf("before the migration: %v, storedVersions %v; want %s in it", err, crd.Status.StoredVersions, other)
	}
	was := read()

	report, err := storage.Migrate(ctx, cluster.Config(), operator.CRDName, storage.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("make migrate-storage: %v", err)
	}
	t.Logf("%s", report)
	if inOther, inStored := inStore(); inOther != 0 || inStored != n {
		t.Errorf("after the migration, etcd holds %d of the %d objects in %s and %d in %s; want all in %s", inStored, n, storedVersion, inOther, other, storedVersion)
	}
	if crd, err = crds.Get(ctx, operator.CRDName, metav1.GetOptions{}); err != nil || !slices.Equal(crd.Status.StoredVersions, []string{storedVersion}) {
		t.Errorf("after the migration: %v, storedVersions %v; want [%s]", err, crd.Status.StoredVersions, storedVersion)
	}
	now := read()
	for name, o := range was {
		if diff := cmp.Diff(o, now[name]); diff != "" {
			t.Errorf("%s changed in the migration (-before +after):\n%s", name, diff)
		}
	}
}

// What the conversion webhook does, written out by hand: its two roles
// must grant exactly this.
var (
	// neededForConversionInNamespace is its certificate's Secret, in
	// «Namespace»: conversion_secret_role.yaml.
	neededForConversionInNamespace = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{operator.DefaultConversionSecret}, Verbs: []string{"get", "update"}},
	}
	// neededForConversion is its CA, written into the CRD:
	// conversion_crd_role.yaml.
	neededForConversion = []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{operator.CRDName}, Verbs: []string{"get", "update"}},
	}
)

// The conversion webhook's roles grant exactly what it needs: applied, the
// manifests let the ServiceAccount do it, and nothing near it.
func TestRBACConversionWebhookGrantsExactlyWhatIsNeeded(t *testing.T) {
	for file, want := range map[string][]rbacv1.PolicyRule{
		"conversion_secret_role.yaml": neededForConversionInNamespace,
		"conversion_crd_role.yaml":    neededForConversion,
	} {
		if got := rbactest.ReadRules(t, filepath.Join(rbacDir, file)); !slices.Equal(flat(got), flat(want)) {
			t.Errorf("%s: got rules %+v\nwant exactly %+v", file, got, want)
		}
	}
	kubectl(t, "apply", "-k", rbacDir)
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	groups := rbactest.ServiceAccountGroups(operator.DefaultNamespace)
	rbactest.CheckAllowed(t, client, account, groups, operator.DefaultNamespace, neededForConversionInNamespace)
	rbactest.CheckAllowed(t, client, account, groups, "", neededForConversion)
	for _, d := range []authorizationv1.ResourceAttributes{
		{Namespace: operator.DefaultNamespace, Resource: "secrets", Name: "another", Verb: "get"},
		{Namespace: operator.DefaultNamespace, Resource: "secrets", Verb: "list"},
		{Namespace: "default", Resource: "secrets", Verb: "create"},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "another.example.com", Verb: "update"},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "list"},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: operator.CRDName, Verb: "delete"},
	} {
		if rbactest.Can(t, client, account, groups, d) {
			t.Errorf("%s may %s %s %q in %q, want denied", account, d.Verb, d.Resource, d.Name, d.Namespace)
		}
	}
}

// RBAC lets the ServiceAccount update the CRD, to write the webhook's CA;
// the admission policy lets it change nothing else of it.
func TestRBACConversionPolicyKeepsTheAccountToTheCABundle(t *testing.T) {
	ctx := context.Background()
	kubectl(t, "apply", "-k", crdDir)
	kubectl(t, "apply", "-k", rbacDir)
	policy := "kooper-«Name»-crd-ca-bundle-only"
	rbactest.CheckPolicyTypes(t, kubernetes.NewForConfigOrDie(cluster.Config()), policy, 60*time.Second)
	asAccount := apiextensionsclient.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100)).ApiextensionsV1().CustomResourceDefinitions()
	refused := func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'")
	}
	change := func(f func(*apiextensionsv1.CustomResourceDefinition)) error {
		crd, err := asAccount.Get(ctx, operator.CRDName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f(crd)
		_, err = asAccount.Update(ctx, crd, metav1.UpdateOptions{})
		return err
	}
	// A new policy takes a moment to be enforced: until a change of the
	// CRD's labels is refused, it is allowed (each a new value).
	e2etest.Eventually(t, 30*time.Second, "the policy refuses a change of the CRD's labels", func() bool {
		err := change(func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Labels = map[string]string{"changed-by": fmt.Sprint("the-operator-", time.Now().UnixNano())}
		})
		if err != nil && !refused(err) {
			t.Fatalf("got %v, want the change allowed (the policy not enforced yet) or refused by the policy", err)
		}
		return err != nil
	})
	kubectl(t, "apply", "-k", crdDir) // its labels back
	if err := change(func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = "another"
	}); !refused(err) {
		t.Errorf("got %v pointing the conversion webhook at another Service, want it refused by the policy", err)
	}
	if err := change(func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[0].Served = !crd.Spec.Versions[0].Served
	}); !refused(err) {
		t.Errorf("got %v changing a version of the CRD, want it refused by the policy", err)
	}
}
`

// The Service of the webhook.
const serviceYAML = `# The API server calls the «Name» operator's conversion webhook through this
# Service (apis/«Short»/conversion.yaml names it): every replica serves it,
# leader or not, on its container port webhook (9443,
# -conversion-webhook-addr), which network_policy.yaml admits, and its
# name.namespace.svc is the name the webhook's self-signed certificate
# covers.
apiVersion: v1
kind: Service
metadata:
  name: «Name»-webhook
  namespace: «Namespace»
  labels:
    app.kubernetes.io/name: «Name»
    app.kubernetes.io/part-of: kooper
spec:
  selector:
    app.kubernetes.io/name: «Name»
  ports:
    - name: webhook
      port: 443
      targetPort: webhook
`

// The rule of the operator's NetworkPolicy admitting the webhook.
const networkPolicyRule = `    # The conversion webhook, from any source: the API server is not a pod.
    # Only from the API server instead:
    #
    # - from:
    #     - ipBlock:
    #         cidr: 192.0.2.10/32 # an address the API server calls from; one ipBlock each
    #   ports:
    #     - port: webhook
    #       protocol: TCP
    - ports:
        - port: webhook
          protocol: TCP
`

// The Secret of the webhook's certificate.
const secretRoleYAML = `# The conversion webhook's self-signed certificate, in the Secret
# «Name»-webhook-tls of the operator's namespace: every replica reads it, and
# the first to start, or the one that renews it, writes it
# (operators/internal/certs). create cannot be limited to a name (the object
# does not exist yet). A test compares these rules with a hand-written list
# (operators/«Name»/integration/versions_test.go).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: kooper-«Name»-conversion-secret
  namespace: «Namespace»
  labels:
    app.kubernetes.io/name: «Name»
    app.kubernetes.io/part-of: kooper
rules:
  - apiGroups: [""]
    resources: ["secrets"]
    verbs: ["create"]
  - apiGroups: [""]
    resources: ["secrets"]
    resourceNames: ["«Name»-webhook-tls"]
    verbs: ["get", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: kooper-«Name»-conversion-secret
  namespace: «Namespace»
  labels:
    app.kubernetes.io/name: «Name»
    app.kubernetes.io/part-of: kooper
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: kooper-«Name»-conversion-secret
subjects:
  - kind: ServiceAccount
    name: «Name»
    namespace: «Namespace»
`

// The CRD's caBundle, and the policy that allows nothing else.
const crdRoleYAML = `# The operator writes its conversion webhook's CA into the «Kind» CRD's
# spec.conversion.webhook.clientConfig.caBundle. RBAC cannot say which
# fields: with update alone, a stolen token could change the schema, or
# point the webhook at another server, which would then read every «Kind»
# read in a version other than the stored one. The policy below refuses any
# update by the operator's ServiceAccount that changes more than the
# caBundle; other users are not affected. A test compares these rules with a
# hand-written list (operators/«Name»/integration/versions_test.go).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kooper-«Name»-conversion-crd
  labels:
    app.kubernetes.io/name: «Name»
    app.kubernetes.io/part-of: kooper
rules:
  - apiGroups: ["apiextensions.k8s.io"]
    resources: ["customresourcedefinitions"]
    resourceNames: ["«CRD»"]
    verbs: ["get", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kooper-«Name»-conversion-crd
  labels:
    app.kubernetes.io/name: «Name»
    app.kubernetes.io/part-of: kooper
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kooper-«Name»-conversion-crd
subjects:
  - kind: ServiceAccount
    name: «Name»
    namespace: «Namespace»
---
# Each field of the spec is compared by name: a field that a later
# Kubernetes adds is not, until it is listed here.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: kooper-«Name»-crd-ca-bundle-only
  labels:
    app.kubernetes.io/name: «Name»
    app.kubernetes.io/part-of: kooper
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["apiextensions.k8s.io"]
        apiVersions: ["v1"]
        operations: ["UPDATE"]
        resources: ["customresourcedefinitions"]
  matchConditions:
    - name: «Name»-service-account
      expression: "request.userInfo.username == 'system:serviceaccount:«Namespace»:«Name»'"
  validations:
    - expression: "object.spec.group == oldObject.spec.group && object.spec.names == oldObject.spec.names && object.spec.scope == oldObject.spec.scope"
      message: "the «Name» operator may change only spec.conversion.webhook.clientConfig.caBundle, not spec.group, spec.names or spec.scope"
      reason: Forbidden
    - expression: "object.spec.versions == oldObject.spec.versions && object.spec.?preserveUnknownFields == oldObject.spec.?preserveUnknownFields"
      message: "the «Name» operator may change only spec.conversion.webhook.clientConfig.caBundle, not spec.versions or spec.preserveUnknownFields"
      reason: Forbidden
    - expression: "object.spec.?conversion.?strategy == oldObject.spec.?conversion.?strategy && object.spec.?conversion.?webhook.?conversionReviewVersions == oldObject.spec.?conversion.?webhook.?conversionReviewVersions"
      message: "the «Name» operator may change only spec.conversion.webhook.clientConfig.caBundle, not spec.conversion.strategy or conversionReviewVersions"
      reason: Forbidden
    - expression: "object.spec.?conversion.?webhook.?clientConfig.?url == oldObject.spec.?conversion.?webhook.?clientConfig.?url && object.spec.?conversion.?webhook.?clientConfig.?service == oldObject.spec.?conversion.?webhook.?clientConfig.?service"
      message: "the «Name» operator may change only spec.conversion.webhook.clientConfig.caBundle, not its url or service"
      reason: Forbidden
    - expression: "object.metadata.?labels == oldObject.metadata.?labels && object.metadata.?annotations == oldObject.metadata.?annotations"
      message: "the «Name» operator may change only spec.conversion.webhook.clientConfig.caBundle, not labels or annotations"
      reason: Forbidden
    # An owner reference to an object that does not exist has the garbage
    # collector delete the CRD, and with it every «Kind».
    - expression: "object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences && object.metadata.?finalizers == oldObject.metadata.?finalizers"
      message: "the «Name» operator may change only spec.conversion.webhook.clientConfig.caBundle, not owner references or finalizers"
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: kooper-«Name»-crd-ca-bundle-only
  labels:
    app.kubernetes.io/name: «Name»
    app.kubernetes.io/part-of: kooper
spec:
  policyName: kooper-«Name»-crd-ca-bundle-only
  validationActions: ["Deny"]
`

// The README's new section.
const readmeVersions = "## Versions\n\n" +
	"`make new-version NAME=«Name» VERSION=«New»` added «New» beside «Old», with the same fields to start from. " +
	"«Old» is still the version stored, and the operator still reads it; the API server converts between the two " +
	"by calling the operator's conversion webhook, which every replica serves (`-conversion-webhook-addr`, " +
	"default `:9443`; in the dev loop, on 127.0.0.1 with `make devcluster`'s certificate).\n\n" +
	"| what | where |\n|---|---|\n" +
	"| the new version's types | `apis/«Short»/«New»/types.go` |\n" +
	"| the conversion, and its round trips | `apis/«Short»/«Old»/conversion.go`, `conversion_test.go` |\n" +
	"| the CRD's `spec.conversion` | `apis/«Short»/conversion.yaml` (`make generate` copies it beside the CRD) |\n" +
	"| the webhook's settings and start | `internal/operator/conversion.go` |\n" +
	"| both versions on the local control plane, and the webhook's RBAC | `integration/versions_test.go` |\n" +
	"| its Service; its port and ingress | `manifests/«Name»/conversion_webhook.yaml`; `deployment.yaml`, `network_policy.yaml` |\n" +
	"| its certificate's Secret, its CA in the CRD, and the policy allowing nothing else | `manifests/rbac/«Name»/conversion_secret_role.yaml`, `conversion_crd_role.yaml` |\n\n" +
	"Then, in this order:\n\n" +
	"1. Make `apis/«Short»/«New»/types.go` what the new version should be, and run `make generate`.\n" +
	"2. Write the conversion: the TODOs of `apis/«Short»/«Old»/conversion.go`. Its round trips fail until nothing is lost " +
	"either way: `go test ./apis/«Short»/«Old»/`. What one version has no field for must be kept in the other, " +
	"for example in an annotation that the way back reads and removes.\n" +
	"3. Both versions on the local control plane, through the webhook: `go test ./operators/«Name»/integration/`.\n" +
	"4. Deploy the new operator before anything asks for «New»: `make upgrade OPERATOR=«Name» IMG=<image>` rolls out " +
	"the operator, then applies the CRD with its CA (docs/deploy.md, \"Upgrading\").\n" +
	"5. Store «New»: `make store-version NAME=«Name» VERSION=«New»` moves the line `// +kubebuilder:storageversion` " +
	"from `apis/«Short»/«Old»/types.go` to `apis/«Short»/«New»/types.go`, has the operator read «New» (its imports " +
	"of `apis/«Short»/«Old»` become `apis/«Short»/«New»`, but for the conversion's and the versions tests'), runs " +
	"`make generate` and `go vet`s the operator. Where the versions' fields differ, change what go vet names. " +
	"Test, and upgrade again.\n" +
	"6. Rewrite what is stored in «Old»: `make migrate-storage CRD=«CRD»`. `status.storedVersions` of the CRD " +
	"then holds «New» alone, and «Old» can later stop being served (`+kubebuilder:unservedversion`) and go.\n"
