package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
)

// Pods lists and deletes pods through the API server.
type Pods struct {
	Client kubernetes.Interface
}

var (
	_ chaos.PodLister  = Pods{}
	_ chaos.PodDeleter = Pods{}
)

// ListPods lists the pods matching target.Selector (a labels.Selector) in
// target.Namespaces, or in every namespace when there are none.
func (p Pods) ListPods(ctx context.Context, target chaos.Target) ([]chaos.Pod, error) {
	sel, ok := target.Selector.(labels.Selector)
	if !ok {
		return nil, fmt.Errorf("target selector is a %T, want a labels.Selector", target.Selector)
	}
	namespaces := target.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []chaos.Pod
	for _, ns := range namespaces {
		list, err := p.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, fmt.Errorf("could not list pods in %q: %w", ns, err)
		}
		for i := range list.Items {
			out = append(out, fromPod(&list.Items[i]))
		}
	}
	return out, nil
}

// DeletePod deletes pod if it is still the same pod (same UID). A pod gone
// or replaced meanwhile is chaos.ErrPodGone.
func (p Pods) DeletePod(ctx context.Context, pod chaos.Pod) error {
	uid := types.UID(pod.UID)
	err := p.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return fmt.Errorf("%w: %s: %w", chaos.ErrPodGone, pod, err)
	}
	return err
}

func fromPod(p *corev1.Pod) chaos.Pod {
	return chaos.Pod{
		Namespace: p.Namespace,
		Name:      p.Name,
		UID:       string(p.UID),
		Deleting:  p.DeletionTimestamp != nil,
		Finished:  p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
	}
}
