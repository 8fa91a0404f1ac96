package kube_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/kube"
)

func pod(ns, name, app string, phase corev1.PodPhase, ready bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	} else if phase == corev1.PodRunning {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	}
	return p
}

// server answers pod LISTs as the API server does and the fake clientset
// does not: field selector on the phase, pages of Limit, Continue tokens.
type server struct {
	pods  []*corev1.Pod
	lists []metav1.ListOptions
}

func (s *server) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		s.lists = append(s.lists, opts)
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return true, nil, err
		}
		fsel, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return true, nil, err
		}
		var match []corev1.Pod
		for _, p := range s.pods {
			if (a.GetNamespace() == "" || a.GetNamespace() == p.Namespace) && sel.Matches(labels.Set(p.Labels)) &&
				fsel.Matches(fields.Set{"status.phase": string(p.Status.Phase)}) {
				match = append(match, *p)
			}
		}
		start, _ := strconv.Atoi(opts.Continue)
		end, cont := len(match), ""
		if opts.Limit > 0 && start+int(opts.Limit) < end {
			end = start + int(opts.Limit)
			cont = strconv.Itoa(end)
		}
		return true, &corev1.PodList{ListMeta: metav1.ListMeta{Continue: cont}, Items: match[start:end]}, nil
	})
	return c
}

func TestListPodsFiltersBySelectorNamespacesAndPhase(t *testing.T) {
	s := &server{pods: []*corev1.Pod{
		pod("a", "web-1", "web", corev1.PodRunning, true),
		pod("a", "db-1", "db", corev1.PodRunning, true),
		pod("b", "web-2", "web", corev1.PodSucceeded, false),
		pod("c", "web-3", "web", corev1.PodPending, false),
		pod("c", "web-4", "web", corev1.PodRunning, false),
	}}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	tests := []struct {
		name       string
		namespaces []string
		want       []string
	}{
		{"every namespace", nil, []string{"a/web-1 live", "c/web-4 not ready"}},
		{"some namespaces", []string{"a", "b"}, []string{"a/web-1 live"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kube.Pods{Client: s.client()}.ListPods(context.Background(), chaos.Target{Selector: sel, Namespaces: tt.namespaces})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				state := "live"
				if !p.Live() {
					state = "not ready"
				}
				names = append(names, p.String()+" "+state)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("got %v, want %v", names, tt.want)
			}
		})
	}
	for _, opts := range s.lists {
		if opts.FieldSelector != "status.phase=Running" || opts.Limit != kube.DefaultPageSize {
			t.Errorf("got list options %+v, want running pods, %d a page", opts, kube.DefaultPageSize)
		}
	}
}

func TestListPodsReadsPagesUpToTheBound(t *testing.T) {
	many := func(namespaces, each int) []*corev1.Pod {
		var out []*corev1.Pod
		for n := range namespaces {
			for i := range each {
				out = append(out, pod(fmt.Sprintf("ns%d", n), fmt.Sprintf("web-%d", i), "web", corev1.PodRunning, true))
			}
		}
		return out
	}
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		namespaces []string
		wantPods   int
		wantLists  int
		wantErr    bool
	}{
		{"one page", many(1, 3), nil, 3, 1, false},
		{"exactly full pages", many(1, 12), nil, 12, 3, false},
		{"the last allowed page", many(1, 19), nil, 19, 5, false},
		{"one pod beyond the bound", many(1, 21), nil, 0, 5, true},
		{"pages counted across namespaces", many(3, 8), []string{"ns0", "ns1", "ns2"}, 0, 5, true},
		{"namespaces within the bound", many(2, 8), []string{"ns0", "ns1"}, 16, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{pods: tt.pods}
			p := kube.Pods{Client: s.client(), PageSize: 4, MaxPages: 5}
			got, err := p.ListPods(context.Background(), chaos.Target{Selector: labels.Everything(), Namespaces: tt.namespaces})
			if tt.wantErr != errors.Is(err, kube.ErrTooManyPods) {
				t.Fatalf("got error %v, want ErrTooManyPods: %t", err, tt.wantErr)
			}
			if len(got) != tt.wantPods || len(s.lists) != tt.wantLists {
				t.Errorf("got %d pods in %d LISTs, want %d in %d", len(got), len(s.lists), tt.wantPods, tt.wantLists)
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

func TestTerminationErrorsMeanWhatTheDomainSays(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	budget := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	budget.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: policyv1.DisruptionBudgetCause, Message: "needs 2 healthy pods"}}
	tests := []struct {
		name   string
		method chaos.Method
		answer error
		want   error // nil: no error
	}{
		{"evicted", chaos.Evict, nil, nil},
		{"deleted", chaos.Delete, nil, nil},
		{"eviction of a pod gone", chaos.Evict, apierrors.NewNotFound(gr, "x"), chaos.ErrPodGone},
		{"eviction of a replaced pod", chaos.Evict, apierrors.NewConflict(gr, "x", errors.New("uid")), chaos.ErrPodGone},
		{"delete of a pod gone", chaos.Delete, apierrors.NewNotFound(gr, "x"), chaos.ErrPodGone},
		{"eviction refused by a budget", chaos.Evict, budget, chaos.ErrDisruptionBudget},
		{"too many requests for another reason", chaos.Evict, apierrors.NewTooManyRequests("slow down", 0), nil},
		{"another failure", chaos.Evict, apierrors.NewInternalError(errors.New("boom")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset()
			var got k8stesting.Action
			answer := func(a k8stesting.Action) (bool, runtime.Object, error) {
				got = a
				return true, nil, tt.answer
			}
			c.PrependReactor("create", "pods", answer)
			c.PrependReactor("delete", "pods", answer)
			err := kube.Pods{Client: c}.DeletePod(context.Background(), chaos.Pod{Namespace: "a", Name: "x", UID: "u"}, tt.method)
			switch {
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("got %v, want %v", err, tt.want)
			case tt.want == nil && (tt.answer == nil) != (err == nil):
				t.Errorf("got %v, want the answer %v", err, tt.answer)
			case tt.want == nil && (errors.Is(err, chaos.ErrPodGone) || errors.Is(err, chaos.ErrDisruptionBudget)):
				t.Errorf("got %v, want neither ErrPodGone nor ErrDisruptionBudget", err)
			}
			var uid *types.UID
			switch a := got.(type) {
			case k8stesting.CreateAction:
				ev, ok := a.GetObject().(*policyv1.Eviction)
				if tt.method != chaos.Evict || a.GetSubresource() != "eviction" || !ok {
					t.Fatalf("got a create of %s/%s %T, want an eviction for method %d", a.GetResource().Resource, a.GetSubresource(), a.GetObject(), tt.method)
				}
				uid = ev.DeleteOptions.Preconditions.UID
			case k8stesting.DeleteAction:
				if tt.method != chaos.Delete {
					t.Fatalf("got a delete, want an eviction")
				}
				uid = a.GetDeleteOptions().Preconditions.UID
			default:
				t.Fatalf("got action %v", got)
			}
			if uid == nil || *uid != "u" {
				t.Errorf("got UID precondition %v, want u", uid)
			}
		})
	}
}
