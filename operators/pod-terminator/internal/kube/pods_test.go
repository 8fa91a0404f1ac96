package kube_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/kube"
)

func pod(ns, name, app string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestListPodsFiltersBySelectorAndNamespaces(t *testing.T) {
	client := fake.NewClientset(
		pod("a", "web-1", "web", corev1.PodRunning),
		pod("a", "db-1", "db", corev1.PodRunning),
		pod("b", "web-2", "web", corev1.PodSucceeded),
		pod("c", "web-3", "web", corev1.PodPending),
	)
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	tests := []struct {
		name       string
		namespaces []string
		want       []string
	}{
		{"every namespace", nil, []string{"a/web-1 live", "b/web-2 finished", "c/web-3 live"}},
		{"some namespaces", []string{"a", "c"}, []string{"a/web-1 live", "c/web-3 live"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kube.Pods{Client: client}.ListPods(context.Background(), chaos.Target{Selector: sel, Namespaces: tt.namespaces})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				state := "live"
				if !p.Live() {
					state = "finished"
				}
				names = append(names, p.String()+" "+state)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("got %v, want %v", names, tt.want)
			}
		})
	}
}

func TestListPodsRefusesAnotherSelectorType(t *testing.T) {
	_, err := kube.Pods{Client: fake.NewClientset()}.ListPods(context.Background(), chaos.Target{Selector: "app=web"})
	if err == nil {
		t.Error("got no error for a string selector")
	}
}

func TestDeletingAGonePodIsErrPodGone(t *testing.T) {
	err := kube.Pods{Client: fake.NewClientset()}.DeletePod(context.Background(), chaos.Pod{Namespace: "a", Name: "x", UID: "u"})
	if !errors.Is(err, chaos.ErrPodGone) {
		t.Errorf("got %v, want ErrPodGone", err)
	}
}
