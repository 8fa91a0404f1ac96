// Package workload builds the benchmark's objects, seeds them into an
// in-memory source, produces updates as fast as possible and tracks which
// object versions a handler has seen.
//
// Every object carries its own version counter in metadata.generation
// (1 when seeded, +1 per update), so the handler learns which version it got
// without parsing resourceVersions, and the final version of every object is
// known before the run starts.
package workload

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kooperkit/kooper/bench/internal/memsource"
)

// Namespace holds every benchmark object.
const Namespace = "bench"

// namePrefix is followed by the object's index; Tracker parses it back.
const namePrefix = "cm-"

// fieldsV1 is the managedFields entry a client-side apply of the object
// below leaves: real objects read from an API server carry one or more.
var fieldsV1 = (`{"f:data":{".":{},"f:config.yaml":{},"f:generation":{},"f:log-level":{},"f:replicas":{}},` +
	`"f:metadata":{"f:annotations":{".":{},"f:bench.kooperkit.io/owner":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},` +
	`"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{}}}}`)

// Object returns the benchmark object with index i at generation 1: a
// ConfigMap of about 1.3 KB as JSON, with 4 labels, 2 annotations, a
// managedFields entry and 4 data keys.
func Object(i int) *corev1.ConfigMap {
	name := fmt.Sprintf("%s%06d", namePrefix, i)
	created := metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         Namespace,
			UID:               types.UID(fmt.Sprintf("5f1c2e8a-0000-4000-8000-%012d", i)),
			Generation:        1,
			CreationTimestamp: created,
			Labels: map[string]string{
				"app.kubernetes.io/name":       "bench-app",
				"app.kubernetes.io/instance":   fmt.Sprintf("bench-app-%d", i%100),
				"app.kubernetes.io/part-of":    "kooper-bench",
				"app.kubernetes.io/managed-by": "kooper",
			},
			Annotations: map[string]string{
				"bench.kooperkit.io/owner": "team-platform",
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` +
					name + `","namespace":"bench"},"data":{"log-level":"info","replicas":"3"}}`,
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager:    "kubectl-client-side-apply",
				Operation:  metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1",
				Time:       &created,
				FieldsType: "FieldsV1",
				FieldsV1:   metav1.NewFieldsV1(fieldsV1),
			}},
		},
		Data: map[string]string{
			"config.yaml": "server:\n  port: 8080\n  timeout: 30s\nfeatures:\n  - alpha\n  - beta\n",
			"log-level":   "info",
			"replicas":    "3",
			"generation":  "1",
		},
	}
}

// Seed adds n objects to src and returns the producer's own copies of them,
// in index order.
func Seed(src *memsource.Source, n int) ([]*corev1.ConfigMap, error) {
	objs := make([]*corev1.ConfigMap, n)
	for i := range objs {
		objs[i] = Object(i)
		if _, err := src.Add(objs[i]); err != nil {
			return nil, fmt.Errorf("could not seed object %d: %w", i, err)
		}
	}
	return objs, nil
}

// FinalGeneration is the generation object i has once updates updates have
// been spread round-robin over n objects.
func FinalGeneration(i, n, updates int) int64 {
	perObject := updates / n
	if i < updates%n {
		perObject++
	}
	return 1 + int64(perObject)
}

// Produce makes updates updates to objs, round-robin, as fast as src takes
// them: each bumps the object's generation and changes its data. objs are
// the caller's copies (src stores its own). It stops early only on error.
func Produce(src *memsource.Source, objs []*corev1.ConfigMap, updates int) error {
	for u := range updates {
		obj := objs[u%len(objs)]
		obj.Generation++
		obj.Data["generation"] = strconv.FormatInt(obj.Generation, 10)
		if _, err := src.Update(obj); err != nil {
			return fmt.Errorf("could not make update %d: %w", u, err)
		}
	}
	return nil
}
