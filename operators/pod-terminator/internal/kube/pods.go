package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
)

// Defaults of Pods' paging: 20 pages of 500 pods read 10,000 pods a period.
const (
	DefaultPageSize = 500
	DefaultMaxPages = 20
)

// ErrTooManyPods is wrapped by ListPods' error when more pods match than
// MaxPages pages hold.
var ErrTooManyPods = errors.New("too many matching pods")

// runningPods selects pods in phase Running on the server: pending and
// finished pods are never Ready, so they are not sent at all.
var runningPods = fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning)).String()

// Pods lists, evicts and deletes pods through the API server.
type Pods struct {
	Client kubernetes.Interface
	// PageSize is the most pods one LIST request returns. Default
	// DefaultPageSize.
	PageSize int64
	// MaxPages bounds the LIST requests of one ListPods, across all its
	// namespaces; more matching pods fail it with ErrTooManyPods. Default
	// DefaultMaxPages.
	MaxPages int
}

var (
	_ chaos.PodLister  = Pods{}
	_ chaos.PodDeleter = Pods{}
)

// ListPods lists the running pods matching target.Selector (a
// labels.Selector) in target.Namespaces, or in every namespace when there
// are none, PageSize at a time. Each page becomes chaos.Pods before the next
// is read, so one page of full Pods at most is held. A selector matching
// more than MaxPages pages fails with ErrTooManyPods, naming what to narrow.
func (p Pods) ListPods(ctx context.Context, target chaos.Target) ([]chaos.Pod, error) {
	sel, ok := target.Selector.(labels.Selector)
	if !ok {
		return nil, fmt.Errorf("target selector is a %T, want a labels.Selector", target.Selector)
	}
	size, maxPages := p.PageSize, p.MaxPages
	if size <= 0 {
		size = DefaultPageSize
	}
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	namespaces := target.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []chaos.Pod
	pages := 0
	for _, ns := range namespaces {
		opts := metav1.ListOptions{LabelSelector: sel.String(), FieldSelector: runningPods, Limit: size}
		for {
			if pages == maxPages {
				return nil, fmt.Errorf("%w: more than %d running pods match (%d pages of %d): narrow spec.selector or spec.namespaces",
					ErrTooManyPods, len(out), pages, size)
			}
			list, err := p.Client.CoreV1().Pods(ns).List(ctx, opts)
			pages++
			if err != nil {
				return nil, fmt.Errorf("could not list pods in %q: %w", ns, err)
			}
			for i := range list.Items {
				out = append(out, fromPod(&list.Items[i]))
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
	return out, nil
}

// DeletePod evicts (chaos.Evict) or deletes (chaos.Delete) pod if it is
// still the same pod (same UID). A pod gone or replaced meanwhile is
// chaos.ErrPodGone; an eviction a PodDisruptionBudget refuses (429 with
// cause DisruptionBudget) is chaos.ErrDisruptionBudget.
func (p Pods) DeletePod(ctx context.Context, pod chaos.Pod, m chaos.Method) error {
	uid := types.UID(pod.UID)
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	pods := p.Client.CoreV1().Pods(pod.Namespace)
	var err error
	switch m {
	case chaos.Evict:
		err = pods.EvictV1(ctx, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			DeleteOptions: &opts,
		})
	case chaos.Delete:
		err = pods.Delete(ctx, pod.Name, opts)
	default:
		return fmt.Errorf("unknown termination method %d", m)
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return fmt.Errorf("%w: %s: %w", chaos.ErrPodGone, pod, err)
	case apierrors.IsTooManyRequests(err) && apierrors.HasStatusCause(err, policyv1.DisruptionBudgetCause):
		return fmt.Errorf("%w: %s: %w", chaos.ErrDisruptionBudget, pod, err)
	}
	return err
}

func fromPod(p *corev1.Pod) chaos.Pod {
	return chaos.Pod{
		Namespace: p.Namespace,
		Name:      p.Name,
		UID:       string(p.UID),
		Ready:     isReady(p),
		Deleting:  p.DeletionTimestamp != nil,
		Finished:  p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
	}
}

// isReady reports whether the pod's Ready condition is True.
func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
