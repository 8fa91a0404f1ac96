package operator

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// region: slim

// slim is the child controllers' cache transform (controller.Config.
// Transform): it keeps of a child's metadata only what the operator reads
// from the cache, and drops everything else before the object is stored.
// The cache key needs the name and namespace; owner.EnqueueOwner, to route
// the child to its Tenant, and the handler, to tell its own namespace, the
// controller reference. The uid, resourceVersion, generation and
// deletionTimestamp say which version is cached and whether it is going,
// the operator's own labels what it is. Annotations, managedFields,
// finalizers, other labels and other owner references go: anyone who may
// edit a child (a tenant's admins may edit the RoleBinding and the
// NetworkPolicy) may make them as large as an object can be, 1.5 MiB,
// and the operator would hold that in every replica, standbys included.
//
// It builds a new object, so it is idempotent, as client-go needs, and
// never changes its input. Anything but metadata is returned as it is.
func slim(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	out := &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              m.Name,
			Namespace:         m.Namespace,
			UID:               m.UID,
			ResourceVersion:   m.ResourceVersion,
			Generation:        m.Generation,
			DeletionTimestamp: m.DeletionTimestamp,
			Labels:            ownLabels(m.Labels),
		},
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return out, nil
}

// ownLabels returns the labels the operator sets on every child, of those
// in l, or nil if there are none.
func ownLabels(l map[string]string) map[string]string {
	var out map[string]string
	for _, key := range []string{tenant.ManagedByLabel, tenant.TenantLabel} {
		if v, ok := l[key]; ok {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[key] = v
		}
	}
	return out
}

// endregion: slim

// ChildCaches reads what the child controllers of a running operator hold
// in their caches (Config.ChildCaches). Its zero value is ready to use and
// holds nothing until Run has made the controllers.
type ChildCaches struct {
	mu    sync.Mutex
	ctrls map[string]*controller.Controller
}

// set makes kind's cache that of ctrl; a nil c is a no-op.
func (c *ChildCaches) set(kind string, ctrl *controller.Controller) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctrls == nil {
		c.ctrls = map[string]*controller.Controller{}
	}
	c.ctrls[kind] = ctrl
}

// List returns a copy of the metadata the child controller of kind (a
// tenant.Kind constant) holds in its cache, and true; or nil and false
// before that cache has synced and after Run has returned.
func (c *ChildCaches) List(kind string) ([]*metav1.PartialObjectMetadata, bool) {
	c.mu.Lock()
	ctrl := c.ctrls[kind]
	c.mu.Unlock()
	if ctrl == nil {
		return nil, false
	}
	objs, ok := ctrl.List()
	if !ok {
		return nil, false
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(objs))
	for _, o := range objs {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok {
			out = append(out, m.DeepCopy())
		}
	}
	return out, true
}
