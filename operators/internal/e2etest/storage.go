package e2etest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// SetStorage makes version the storage version of the CRD named crd, and
// waits until the API server has taken the change: the CRD is established
// again, and two seconds more, since the API server replaces its handler
// for the resource a moment later (a write made before is still stored in
// the previous version; StoreAgain writes such objects again).
func SetStorage(t testing.TB, cfg *rest.Config, crd, version string) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := crds.Get(context.Background(), crd, metav1.GetOptions{})
		if err != nil {
			return err
		}
		found := false
		for i := range c.Spec.Versions {
			c.Spec.Versions[i].Storage = c.Spec.Versions[i].Name == version
			found = found || c.Spec.Versions[i].Storage
		}
		if !found {
			return fmt.Errorf("the CRD has no version %s", version)
		}
		_, err = crds.Update(context.Background(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("could not make %s the storage version of %s: %v", version, crd, err)
	}
	Eventually(t, 30*time.Second, crd+" stores "+version, func() bool {
		c, err := crds.Get(context.Background(), crd, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
	time.Sleep(2 * time.Second)
}

// StoreAgain writes each object of names (read and written through res)
// that etcd at etcdURL holds at keyPrefix+name in another apiVersion than
// apiVersion again, unchanged (a merge patch naming its resourceVersion),
// until every one is stored in apiVersion: the API server stores an
// object in the storage version it has when the object is written, and
// takes a new one a moment after the CRD says so (SetStorage).
func StoreAgain(t testing.TB, res dynamic.ResourceInterface, etcdURL, keyPrefix, apiVersion string, names ...string) {
	t.Helper()
	var late int
	deadline := time.Now().Add(30 * time.Second)
	for {
		late = 0
		stored := Stored(t, etcdURL, keyPrefix, true)
		for _, name := range names {
			if stored[keyPrefix+name] == apiVersion {
				continue
			}
			late++
			o, err := res.Get(context.Background(), name, metav1.GetOptions{})
			if err == nil {
				_, _ = res.Patch(context.Background(), name, types.MergePatchType,
					fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q}}`, o.GetResourceVersion()), metav1.PatchOptions{})
			}
		}
		if late == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s, %d of %d objects are not stored in %s", late, len(names), apiVersion)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stored returns the apiVersion of the object etcd at etcdURL holds at
// key, or of each object under key if prefix, by key: read through etcd's
// JSON gateway, since custom resources are stored as JSON. A test reads
// there what no API call shows, the version an object is stored in.
func Stored(t testing.TB, etcdURL, key string, prefix bool) map[string]string {
	t.Helper()
	req := map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))}
	if prefix {
		end := []byte(key)
		end[len(end)-1]++ // the keys that start with key: [key, end)
		req["range_end"] = base64.StdEncoding.EncodeToString(end)
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(etcdURL+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("could not read %s from etcd: %v", key, err)
	}
	defer resp.Body.Close()
	var got struct {
		KVs []struct {
			Key   []byte `json:"key"`   // base64 in JSON
			Value []byte `json:"value"` // base64 in JSON
		} `json:"kvs"`
		More bool `json:"more"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.More {
		t.Fatalf("could not read %s from etcd: %v (more: %v)", key, err, got.More)
	}
	versions := make(map[string]string, len(got.KVs))
	for _, kv := range got.KVs {
		var obj struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(kv.Value, &obj); err != nil {
			t.Fatalf("%s in etcd is not JSON: %v", kv.Key, fmt.Errorf("%w: %.80q", err, kv.Value))
		}
		versions[string(kv.Key)] = obj.APIVersion
	}
	return versions
}
