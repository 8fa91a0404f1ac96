package pods

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// SeedWriters is how many requests the parent keeps in flight while
// seeding: as many as help the API server go faster.
const SeedWriters = 64

// DefaultChurnWriters is how many updates the parent keeps in flight while
// churning, by default. Against a 2-core control plane, 4 already saturate
// the API server (a pod patch costs it about 12 ms of CPU); more only make
// updates wait in its queue, which every implementation's latency would
// then mostly measure.
const DefaultChurnWriters = 4

// WriteClient returns a clientset for the parent's writes, rate-limited
// far above what the API server can take (QPS and burst 5000), so the
// server sets the pace.
func WriteClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 5000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("could not create the write client: %w", err)
	}
	return client, nil
}

// Seed creates namespace ns and n pods in it (Pod(ns, i) for i in [0, n)),
// each created with FieldManager then given a running status by
// StatusFieldManager, so every pod carries two managedFields entries as on
// a real cluster. It writes a progress line to progress every 1,000 pods.
func Seed(ctx context.Context, client kubernetes.Interface, ns string, n int, progress io.Writer) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("could not create namespace %s: %w", ns, err)
	}
	began := time.Now()
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(SeedWriters)
	for i := range n {
		g.Go(func() error {
			created, err := client.CoreV1().Pods(ns).Create(gctx, Pod(ns, i), metav1.CreateOptions{FieldManager: FieldManager})
			if err != nil {
				return fmt.Errorf("could not create pod %s: %w", Name(i), err)
			}
			created.Status = Status(i, began)
			if _, err := client.CoreV1().Pods(ns).UpdateStatus(gctx, created, metav1.UpdateOptions{FieldManager: StatusFieldManager}); err != nil {
				return fmt.Errorf("could not update the status of pod %s: %w", Name(i), err)
			}
			if d := done.Add(1); d%1000 == 0 || int(d) == n {
				fmt.Fprintf(progress, "seeding: %d/%d pods (%.1fs)\n", d, n, time.Since(began).Seconds())
			}
			return nil
		})
	}
	return g.Wait()
}

// Count returns how many pods namespace ns holds, from one small LIST.
func Count(ctx context.Context, client kubernetes.Interface, ns string) (int, error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("could not list the pods of %s: %w", ns, err)
	}
	n := len(list.Items)
	if list.RemainingItemCount != nil {
		n += int(*list.RemainingItemCount)
	}
	return n, nil
}

// Sizes are a seeded pod's average size on the wire, as a GET returns it.
type Sizes struct {
	// Sample is how many pods were read.
	Sample int
	// JSON and Protobuf are average response body sizes in bytes.
	JSON, Protobuf float64
}

// MeasureSizes reads the first sample pods of ns as JSON and as protobuf
// and returns their average sizes.
func MeasureSizes(ctx context.Context, client kubernetes.Interface, ns string, sample int) (Sizes, error) {
	s := Sizes{Sample: sample}
	for i := range sample {
		for _, accept := range []struct {
			mediaType string
			sum       *float64
		}{
			{"application/json", &s.JSON},
			{"application/vnd.kubernetes.protobuf", &s.Protobuf},
		} {
			body, err := client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name(Name(i)).
				SetHeader("Accept", accept.mediaType).DoRaw(ctx)
			if err != nil {
				return Sizes{}, fmt.Errorf("could not read pod %s as %s: %w", Name(i), accept.mediaType, err)
			}
			*accept.sum += float64(len(body))
		}
	}
	if sample > 0 {
		s.JSON /= float64(sample)
		s.Protobuf /= float64(sample)
	}
	return s, nil
}

// Churn updates pods [0, u) of ns once each, writers at a time: a merge
// patch (by FieldManager) setting TokenAnnotation to token and
// SentAnnotation to the time just before the request. It returns how long
// sending took.
func Churn(ctx context.Context, client kubernetes.Interface, ns string, u, writers int, token string) (time.Duration, error) {
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	for i := range u {
		g.Go(func() error {
			_, err := Touch(gctx, client, ns, i, token)
			return err
		})
	}
	err := g.Wait()
	return time.Since(began), err
}

// Touch updates pod i of ns as Churn does (TokenAnnotation set to token,
// SentAnnotation to the time just before the request) and returns its new
// resourceVersion.
func Touch(ctx context.Context, client kubernetes.Interface, ns string, i int, token string) (string, error) {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		TokenAnnotation, token, SentAnnotation, SentTime(time.Now()))
	pod, err := client.CoreV1().Pods(ns).Patch(ctx, Name(i), types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return "", fmt.Errorf("could not patch pod %s: %w", Name(i), err)
	}
	return pod.ResourceVersion, nil
}

// Versions returns the UID and resourceVersion of pods 0 to n-1 of ns, by
// index, from one metadata-only LIST: an error if one is missing.
func Versions(ctx context.Context, cfg *rest.Config, ns string, n int) ([]types.UID, []string, error) {
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("could not create the metadata client: %w", err)
	}
	list, err := md.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("could not list the pods of %s: %w", ns, err)
	}
	uids, rvs := make([]types.UID, n), make([]string, n)
	for _, p := range list.Items {
		if i, ok := Index(p.Name); ok && i < n {
			uids[i], rvs[i] = p.UID, p.ResourceVersion
		}
	}
	for i, uid := range uids {
		if uid == "" {
			return nil, nil, fmt.Errorf("pod %s/%s is missing", ns, Name(i))
		}
	}
	return uids, rvs, nil
}

// Create creates n new pods Pod(ns, i) in ns, one every interval (each in
// its own request, so a slow one delays no other), carrying token and the
// time just before its create request in TokenAnnotation and
// SentAnnotation. It returns once all were created.
func Create(ctx context.Context, client kubernetes.Interface, ns string, n int, every time.Duration, token string) error {
	g, gctx := errgroup.WithContext(ctx)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := range n {
		if i > 0 {
			select {
			case <-tick.C:
			case <-gctx.Done():
				return g.Wait()
			}
		}
		g.Go(func() error {
			pod := Pod(ns, i)
			pod.Annotations[TokenAnnotation] = token
			pod.Annotations[SentAnnotation] = SentTime(time.Now())
			if _, err := client.CoreV1().Pods(ns).Create(gctx, pod, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
				return fmt.Errorf("could not create pod %s/%s: %w", ns, Name(i), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// Clear deletes every pod of ns and waits until none is left. Pods bound
// to no node go at once.
func Clear(ctx context.Context, client kubernetes.Interface, ns string) error {
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("could not delete the pods of %s: %w", ns, err)
	}
	for {
		n, err := Count(ctx, client, ns)
		if err != nil || n == 0 {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// EnsureNamespace creates namespace ns unless it exists.
func EnsureNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("could not create namespace %s: %w", ns, err)
	}
	return nil
}
