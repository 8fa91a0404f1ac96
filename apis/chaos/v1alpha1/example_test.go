package v1alpha1_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
)

// A PodTerminator that deletes a quarter of the pods labelled app=web in the
// shop namespace every 5 minutes, always leaving 2 running. Fields left unset
// (here dryRun) get their defaults from the API server when it is created.
func ExamplePodTerminator() {
	pt := chaosv1alpha1.PodTerminator{
		TypeMeta: metav1.TypeMeta{
			APIVersion: chaosv1alpha1.SchemeGroupVersion.String(),
			Kind:       "PodTerminator",
		},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: chaosv1alpha1.PodTerminatorSpec{
			Selector:           metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Namespaces:         []string{"shop"},
			PeriodSeconds:      ptr.To[int32](300),
			TerminationPercent: 25,
			MinimumInstances:   ptr.To[int32](2),
		},
	}
	out, err := yaml.Marshal(pt)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// apiVersion: chaos.kooperkit.io/v1alpha1
	// kind: PodTerminator
	// metadata:
	//   name: web
	// spec:
	//   minimumInstances: 2
	//   namespaces:
	//   - shop
	//   periodSeconds: 300
	//   selector:
	//     matchLabels:
	//       app: web
	//   terminationPercent: 25
	// status: {}
}
