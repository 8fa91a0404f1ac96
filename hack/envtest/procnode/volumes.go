package procnode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// volumeFile is one file of a volume: its path in the volume, its content
// and its mode.
type volumeFile struct {
	path string
	data []byte
	mode fs.FileMode
}

// volumes renders a pod's volumes as the kubelet would mount them:
// ServiceAccount tokens from the TokenRequest API, bound to the pod;
// ConfigMaps, Secrets and downward API fields as files. A volume of
// another kind is reported as unsupported.
type volumes struct {
	client kubernetes.Interface
	env    envSources
}

// rendered is a volume's files, and when its tokens are to be requested
// again (80% of their life, as the kubelet does; zero without tokens).
type rendered struct {
	files   []volumeFile
	refresh time.Time
	// writable marks an emptyDir: a directory anyone may write to.
	writable bool
}

func (v volumes) render(ctx context.Context, pod *corev1.Pod, vol corev1.Volume) (rendered, error) {
	mode := func(m *int32, def int32) fs.FileMode {
		if m != nil {
			return fs.FileMode(*m)
		}
		return fs.FileMode(def)
	}
	switch {
	case vol.EmptyDir != nil:
		return rendered{writable: true}, nil
	case vol.Projected != nil:
		var out rendered
		def := ptr.Deref(vol.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for _, src := range vol.Projected.Sources {
			var files []volumeFile
			var err error
			switch {
			case src.ServiceAccountToken != nil:
				var refresh time.Time
				files, refresh, err = v.token(ctx, pod, src.ServiceAccountToken, mode(nil, def))
				if out.refresh.IsZero() || refresh.Before(out.refresh) {
					out.refresh = refresh
				}
			case src.ConfigMap != nil:
				files, err = v.configMap(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, mode(nil, def))
			case src.Secret != nil:
				files, err = v.secret(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional, mode(nil, def))
			case src.DownwardAPI != nil:
				files, err = v.downward(pod, src.DownwardAPI.Items, mode(nil, def))
			default:
				err = fmt.Errorf("%w: a projected source other than serviceAccountToken, configMap, secret and downwardAPI", ErrUnsupported)
			}
			if err != nil {
				return rendered{}, fmt.Errorf("volume %s: %w", vol.Name, err)
			}
			out.files = append(out.files, files...)
		}
		return out, nil
	case vol.ConfigMap != nil:
		files, err := v.configMap(ctx, pod.Namespace, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.Optional,
			mode(vol.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode))
		return rendered{files: files}, err
	case vol.Secret != nil:
		files, err := v.secret(ctx, pod.Namespace, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.Optional,
			mode(vol.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode))
		return rendered{files: files}, err
	case vol.DownwardAPI != nil:
		files, err := v.downward(pod, vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode))
		return rendered{files: files}, err
	}
	return rendered{}, fmt.Errorf("%w: volume %s: only emptyDir, projected, configMap, secret and downwardAPI volumes", ErrUnsupported, vol.Name)
}

// token requests a token for the pod's ServiceAccount, bound to the pod,
// as the kubelet does for a serviceAccountToken projection.
func (v volumes) token(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, mode fs.FileMode) ([]volumeFile, time.Time, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(ptr.Deref(src.ExpirationSeconds, 3600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tok, err := v.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("could not request a token for ServiceAccount %s/%s: %w", pod.Namespace, sa, err)
	}
	now := time.Now()
	life := tok.Status.ExpirationTimestamp.Sub(now)
	return []volumeFile{{path: src.Path, data: []byte(tok.Status.Token), mode: mode}}, now.Add(life * 8 / 10), nil
}

func (v volumes) configMap(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, mode fs.FileMode) ([]volumeFile, error) {
	cm, err := v.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
			return nil, nil
		}
		return nil, fmt.Errorf("configMap %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, s := range cm.Data {
		data[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return keyFiles(data, items, mode, "ConfigMap "+name)
}

func (v volumes) secret(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, mode fs.FileMode) ([]volumeFile, error) {
	sec, err := v.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return keyFiles(sec.Data, items, mode, "Secret "+name)
}

// keyFiles is a file per key, or per item when items are given.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, mode fs.FileMode, what string) ([]volumeFile, error) {
	var files []volumeFile
	if len(items) == 0 {
		for k, b := range data {
			files = append(files, volumeFile{path: k, data: b, mode: mode})
		}
		return files, nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("%s has no key %s", what, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode)
		}
		files = append(files, volumeFile{path: it.Path, data: b, mode: m})
	}
	return files, nil
}

func (v volumes) downward(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode fs.FileMode) ([]volumeFile, error) {
	var files []volumeFile
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = fieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := &pod.Spec.Containers[0]
			val, err = v.env.resourceValue(pod, c, it.ResourceFieldRef)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI %s: %w", it.Path, err)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode)
		}
		files = append(files, volumeFile{path: it.Path, data: []byte(val), mode: m})
	}
	return files, nil
}

// write puts a volume's files in root under dir (the mount path, a path in
// root), owned by root, group fsGroup when set, replacing each file at once
// so that a reader never sees half a token. Everything goes through root:
// whatever links are under dir, nothing is written outside root, and a
// file's own link is replaced, not written through.
func (r rendered) write(root *os.Root, dir string, fsGroup *int64) error {
	if r.writable {
		if err := root.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		return root.Chmod(dir, 0o777|fs.ModeSticky)
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range r.files {
		if err := writeVolumeFile(root, path.Join(dir, path.Clean("/"+f.path)), f, fsGroup); err != nil {
			return fmt.Errorf("could not write %s: %w", f.path, err)
		}
	}
	return nil
}

// writeVolumeFile writes f at name in root: in a new file, renamed over
// name.
func writeVolumeFile(root *os.Root, name string, f volumeFile, fsGroup *int64) error {
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	tmp := name + ".procnode-tmp"
	if err := root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = out.Write(f.data)
	m := f.mode
	if err == nil && fsGroup != nil {
		err = out.Chown(0, int(*fsGroup))
		m |= 0o040
	}
	if err == nil {
		err = out.Chmod(m)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return root.Rename(tmp, name)
}
