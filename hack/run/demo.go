package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
)

// A demo is what make run shows of one operator: its flags, the objects it
// creates for the operator to act on, and how it removes them. Each
// operator's demo is declared in a file of its own, named after the
// operator, which registers it from init; that file goes with the operator
// (make remove-operator), and an operator without a demo gets the flags
// every scaffolded operator has and its example.yaml.
type demo struct {
	// port is the port of its -http-addr on 127.0.0.1.
	port int
	// args are its flags besides -kubeconfig and -http-addr.
	args []string
	// start creates the demo's objects once the operator runs, and returns
	// when they show what the operator does, or ctx is done.
	start func(ctx context.Context, c demoClients, say func(string, ...any)) error
	// stop deletes them, while the operator still runs (to take its
	// finalizers off), and returns once they are gone.
	stop func(ctx context.Context, c demoClients) error
	// kinds are the kinds whose Events make run prints.
	kinds []string
	// resources are what the printed kubectl hint gets besides pods.
	resources []string
	// shows are lines make run prints of the demo: its test looks for each.
	shows []*regexp.Regexp
}

// demoClients are the clients a demo creates its objects with.
type demoClients struct {
	kube   kubernetes.Interface
	kooper versioned.Interface
}

// demos are the operators' demos, by operator name (register).
var demos = map[string]demo{}

// register adds the demo of operator name; each demo's file calls it from
// init.
func register(name string, d demo) { demos[name] = d }

// The workload every program acts on: pod-logger and pod-sharding print
// its pods, operators' demos select them.
const (
	demoNamespace  = "kooper-demo"
	demoDeployment = "victim"
)

// demoLabels are the labels of the workload's pods.
var demoLabels = map[string]string{"app": "victim"}

// workload creates a Deployment of pods that the programs act on and scales
// it up after a while, so there is something to see.
func workload(ctx context.Context, client kubernetes.Interface, say func(string, ...any)) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("could not create the demo namespace: %w", err)
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoDeployment, Namespace: ns.Name, Labels: demoLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: demoLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: demoLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns.Name).Create(ctx, deploy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("could not create the demo Deployment: %w", err)
	}
	say("created Deployment %s/%s with 3 replicas (kwok runs its pods)", demoNamespace, demoDeployment)
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(5 * time.Second):
	}
	scale, err := client.AppsV1().Deployments(ns.Name).GetScale(ctx, demoDeployment, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("could not read the demo scale: %w", err)
	}
	scale.Spec.Replicas = 5
	if _, err := client.AppsV1().Deployments(ns.Name).UpdateScale(ctx, demoDeployment, scale, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("could not scale the demo Deployment: %w", err)
	}
	say("scaled %s/%s to 5 replicas", demoNamespace, demoDeployment)
	return nil
}

// showEvents prints the Events recorded about objects of kind, until ctx
// is done.
func showEvents(ctx context.Context, client kubernetes.Interface, kind string, out io.Writer) {
	w, err := client.CoreV1().Events(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind})
	if err != nil {
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if e, isEvent := ev.Object.(*corev1.Event); isEvent && ev.Type != watch.Deleted {
				fmt.Fprintf(out, "%s %s: %s %s\n", kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
}

// demoNames returns the names of the registered demos whose operators are
// among progs, sorted.
func demoNames(progs []program) []string {
	var names []string
	for _, p := range progs {
		if _, ok := demos[p.name]; ok {
			names = append(names, p.name)
		}
	}
	slices.Sort(names)
	return names
}
