// Package storage moves the stored objects of a custom resource to its
// storage version, then drops the versions it moved them from from the
// CRD's status.storedVersions, after which those versions can leave the
// CRD.
//
// Making a new version the storage version (storage: true in the CRD)
// changes nothing in etcd: each object stays in the version it was written
// in until it is written again. An object never written since stays there
// for good, and the API server then needs the old version, and the
// conversion webhook, to read it. A migration writes every object once
// without changing it, so that the API server stores it in the storage
// version.
//
// Migrate does that in one of two ways:
//
//   - Where the API server serves storagemigration.k8s.io/v1 (Kubernetes
//     1.37 and later, with kube-controller-manager's storage version
//     migrator), it creates a StorageVersionMigration for the resource
//     and waits until the migrator has written every object and set the
//     CRD's storedVersions to the storage version alone.
//   - Elsewhere (1.36 serves only v1beta1, off by default), it writes
//     every object itself: a paged list, then per object a merge patch
//     that names only its resourceVersion. The patch changes nothing, but
//     the API server stores the object again in the storage version; a
//     conflict means it was written since (so it is stored in the
//     storage version already) and a NotFound that it is gone. Then it
//     sets storedVersions, unless the storage version changed meanwhile.
//
// Either way the conversion webhook must be up: every object is read in
// the storage version, converted from the version it is stored in.
package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Method names how a migration was done: Report.Method.
const (
	// MethodStorageVersionMigration is kube-controller-manager's migrator,
	// driven by a StorageVersionMigration object.
	MethodStorageVersionMigration = "StorageVersionMigration"
	// MethodRewrite is this package's own no-op writes.
	MethodRewrite = "rewrite"
	// MethodNone: status.storedVersions held the storage version alone
	// already, and nothing was written.
	MethodNone = "none"
)

// FieldManager is the field manager of the rewrite's patches.
const FieldManager = "kooper-migrate-storage"

// Options tune Migrate. The zero value is ready to use.
type Options struct {
	// Rewrite writes the objects with this package's own patches even
	// where the server serves StorageVersionMigration.
	Rewrite bool
	// PageSize is the rewrite's list page size. Default 100.
	PageSize int64
	// Poll is how often the StorageVersionMigration is read while it
	// runs. Default 500ms.
	Poll time.Duration
	// Logf, if set, receives a line per step.
	Logf func(format string, args ...any)
}

// Report is what a migration did.
type Report struct {
	// CRD is the CustomResourceDefinition's name, Version its storage
	// version.
	CRD, Version string
	// Method is one of MethodStorageVersionMigration, MethodRewrite and
	// MethodNone.
	Method string
	// Before and After are the CRD's status.storedVersions.
	Before, After []string
	// Migration is the StorageVersionMigration's name
	// (MethodStorageVersionMigration).
	Migration string
	// The rewrite's counts (MethodRewrite): the objects listed; of them,
	// rewritten (the API server wrote them again), already stored in the
	// storage version (it wrote nothing), written by someone else since
	// the list (a conflict: stored in the storage version already), and
	// deleted since.
	Listed, Rewritten, Already, ChangedSince, Gone int
}

// String is the report in one line.
func (r Report) String() string {
	s := fmt.Sprintf("%s: storage version %s, storedVersions %v -> %v, by %s", r.CRD, r.Version, r.Before, r.After, r.Method)
	switch r.Method {
	case MethodStorageVersionMigration:
		s += " " + r.Migration
	case MethodRewrite:
		s += fmt.Sprintf(": %d listed, %d rewritten, %d stored in %s already, %d written since, %d deleted since",
			r.Listed, r.Rewritten, r.Already, r.Version, r.ChangedSince, r.Gone)
	}
	return s
}

// Migrate moves every object of the custom resource crd (its name, e.g.
// "podterminators.chaos.kooperkit.io") to its storage version, and leaves
// status.storedVersions holding that version alone. It is safe to run
// again, and at any time: writes made while it runs are stored in the
// storage version anyway. An object the API server refuses to write (an
// admission webhook or policy that rejects it unchanged) fails the
// migration after the others are written, naming it, and storedVersions
// is left as it was.
func Migrate(ctx context.Context, cfg *rest.Config, crd string, opts Options) (Report, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return Report{}, err
	}
	crdClient := crds.ApiextensionsV1().CustomResourceDefinitions()
	def, err := crdClient.Get(ctx, crd, metav1.GetOptions{})
	if err != nil {
		return Report{}, fmt.Errorf("reading the CRD: %w", err)
	}
	r := Report{CRD: crd, Version: storageVersion(def), Before: def.Status.StoredVersions}
	if r.Version == "" {
		return r, fmt.Errorf("CRD %s has no storage version", crd)
	}
	if slices.Equal(def.Status.StoredVersions, []string{r.Version}) {
		r.Method, r.After = MethodNone, r.Before
		opts.Logf("%s: every object is stored in %s already", crd, r.Version)
		return r, nil
	}
	m := &migration{opts: opts, crds: crdClient, crd: def, report: &r}
	served := false
	if !opts.Rewrite {
		if served, err = servesMigrations(cfg); err != nil {
			return r, err
		}
	}
	if served {
		r.Method = MethodStorageVersionMigration
		err = m.byMigrator(ctx, cfg)
	} else {
		r.Method = MethodRewrite
		err = m.byRewrite(ctx, cfg)
	}
	return r, err
}

// migration is one Migrate's state.
type migration struct {
	opts   Options
	crds   crdClient
	crd    *apiextensionsv1.CustomResourceDefinition // as read at the start
	report *Report
}

// crdClient is the part of the CRD client a migration uses.
type crdClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	UpdateStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

// servesMigrations tells whether the API server serves
// StorageVersionMigrations in storagemigration.k8s.io/v1.
func servesMigrations(cfg *rest.Config) (bool, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := client.Discovery().ServerResourcesForGroupVersion(svmv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", svmv1.SchemeGroupVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "storageversionmigrations" }), nil
}

// byMigrator creates a StorageVersionMigration and waits for the migrator
// to finish it and to set storedVersions.
func (m *migration) byMigrator(ctx context.Context, cfg *rest.Config) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	svms := client.StoragemigrationV1().StorageVersionMigrations()
	svm, err := svms.Create(ctx, &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: m.crd.Spec.Names.Plural + "-"},
		Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{
			Group: m.crd.Spec.Group, Resource: m.crd.Spec.Names.Plural,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating a StorageVersionMigration: %w", err)
	}
	m.report.Migration = svm.Name
	m.opts.Logf("%s: StorageVersionMigration %s created; kube-controller-manager's migrator writes every object", m.crd.Name, svm.Name)
	var last string
	err = wait.PollUntilContextCancel(ctx, m.opts.Poll, true, func(ctx context.Context) (bool, error) {
		svm, err := svms.Get(ctx, svm.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // read again at the next poll
		}
		if c := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed)); c != nil && c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("StorageVersionMigration %s failed: %s", svm.Name, c.Message)
		}
		if c := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationRunning)); c != nil && c.Message != last {
			last = c.Message
			m.opts.Logf("%s: %s", svm.Name, c.Message)
		}
		if !meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)) {
			return false, nil
		}
		// The migrator sets storedVersions after the migration succeeds,
		// unless the CRD changed while it ran.
		crd, err := m.crds.Get(ctx, m.crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // read again at the next poll
		}
		m.report.After = crd.Status.StoredVersions
		if slices.Equal(crd.Status.StoredVersions, []string{m.report.Version}) {
			return true, nil
		}
		if c := apihelpers.FindCRDCondition(crd, apiextensionsv1.StorageMigrating); c != nil && c.Status == apiextensionsv1.ConditionFalse &&
			strings.Contains(c.Message, "not been updated") {
			return false, fmt.Errorf("StorageVersionMigration %s succeeded, but storedVersions is %v: %s (run this again)", svm.Name, crd.Status.StoredVersions, c.Message)
		}
		return false, nil
	})
	if err != nil && last == "" && ctx.Err() != nil {
		return fmt.Errorf("migrating %s: no migrator took StorageVersionMigration %s up (kube-controller-manager runs one from Kubernetes 1.37, its storage-version-migrator-controller; -rewrite writes the objects without it): %w", m.crd.Name, svm.Name, err)
	}
	if err != nil {
		return fmt.Errorf("migrating %s by StorageVersionMigration %s: %w", m.crd.Name, svm.Name, err)
	}
	return nil
}

// byRewrite writes every object once, unchanged, then sets storedVersions.
func (m *migration) byRewrite(ctx context.Context, cfg *rest.Config) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: m.crd.Spec.Group, Version: m.report.Version, Resource: m.crd.Spec.Names.Plural}
	if err := m.rewrite(ctx, dynamicResource{client.Resource(gvr)}); err != nil {
		return err
	}
	return m.setStoredVersions(ctx)
}

// maxRelists bounds the lists started again after their continue token
// expired (410 Gone: etcd compacted past the list's revision).
const maxRelists = 3

// resource is what the rewrite asks of the API server.
type resource interface {
	// List lists one page.
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	// Patch merge-patches one object with body.
	Patch(ctx context.Context, namespace, name string, body []byte) (*unstructured.Unstructured, error)
}

// dynamicResource is a resource of the dynamic client.
type dynamicResource struct {
	res dynamic.NamespaceableResourceInterface
}

func (d dynamicResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return d.res.List(ctx, opts)
}

func (d dynamicResource) Patch(ctx context.Context, namespace, name string, body []byte) (*unstructured.Unstructured, error) {
	return d.res.Namespace(namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
}

// rewrite lists res page by page and patches each object.
func (m *migration) rewrite(ctx context.Context, res resource) error {
	var refused []error
	cont, relists := "", 0
	for {
		var list *unstructured.UnstructuredList
		err := onRetriable(ctx, func() (err error) {
			list, err = res.List(ctx, metav1.ListOptions{Limit: m.opts.PageSize, Continue: cont})
			return err
		})
		if apierrors.IsResourceExpired(err) && relists < maxRelists {
			// Start again: what was written is found stored in the
			// storage version already, and costs one request.
			relists++
			cont = ""
			m.opts.Logf("%s: the list expired; listing again from the start (%d of %d)", m.crd.Name, relists, maxRelists)
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", m.crd.Name, err)
		}
		for _, item := range list.Items {
			m.report.Listed++
			if err := m.patch(ctx, res, item.GetNamespace(), item.GetName(), item.GetResourceVersion()); err != nil {
				refused = append(refused, err)
			}
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%d of %d objects were not rewritten, and storedVersions is left as it was: %w", len(refused), m.report.Listed, errors.Join(refused...))
	}
	return nil
}

// patch writes one object again, unchanged: a merge patch naming only the
// resourceVersion it was listed at, so that a write made since wins.
func (m *migration) patch(ctx context.Context, res resource, namespace, name, resourceVersion string) error {
	body := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q}}`, resourceVersion)
	return onRetriable(ctx, func() error {
		got, err := res.Patch(ctx, namespace, name, body)
		switch {
		case apierrors.IsConflict(err):
			m.report.ChangedSince++
			return nil
		case apierrors.IsNotFound(err):
			m.report.Gone++
			return nil
		case err != nil:
			if retriable(err) {
				return err
			}
			return fmt.Errorf("%s: %w", strings.TrimPrefix(namespace+"/"+name, "/"), err)
		case got.GetResourceVersion() == resourceVersion:
			m.report.Already++ // the same bytes: the API server wrote nothing
		default:
			m.report.Rewritten++
		}
		return nil
	})
}

// setStoredVersions sets status.storedVersions to the storage version
// alone, unless the storage version changed since the migration began
// (objects may then be stored in a version it did not write them in).
func (m *migration) setStoredVersions(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := m.crds.Get(ctx, m.crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v := storageVersion(crd); v != m.report.Version {
			return fmt.Errorf("the storage version changed from %s to %s while the objects were written: run this again", m.report.Version, v)
		}
		crd.Status.StoredVersions = []string{m.report.Version}
		if _, err := m.crds.UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return err
		}
		m.report.After = crd.Status.StoredVersions
		return nil
	})
}

// storageVersion is the name of crd's version with storage: true.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// retriable tells the errors worth another try: throttling, timeouts and
// the API server's own failures.
func retriable(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// onRetriable runs fn, again after a backoff while it fails retriably.
func onRetriable(ctx context.Context, fn func() error) error {
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 6, Cap: 5 * time.Second}
	return retry.OnError(backoff, func(err error) bool { return retriable(err) && ctx.Err() == nil }, fn)
}
