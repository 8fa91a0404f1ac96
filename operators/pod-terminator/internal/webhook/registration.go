package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Name is the webhook's name in its ValidatingWebhookConfiguration, which
// a refusal quotes: admission webhook "podterminators.chaos.kooperkit.io"
// denied the request.
const Name = "podterminators.chaos.kooperkit.io"

// CRDName is the PodTerminator CustomResourceDefinition's name: its
// conversion webhook is served beside the admission webhook
// (conversion.Path).
const CRDName = "podterminators.chaos.kooperkit.io"

// Registration returns the ValidatingWebhookConfiguration name that sends
// the API server's creates and updates of PodTerminators to this webhook
// at clientConfig. It is what manifests/pod-terminator/webhook.yaml
// installs, with a Service there (a test keeps the two the same; that file
// says why each field is what it is); the operator registers it itself only
// in the dev loop, with a URL (operator.Webhook.Register).
func Registration(name string, clientConfig admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"app.kubernetes.io/name": "pod-terminator", "app.kubernetes.io/part-of": "kooper"},
		},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         Name,
			ClientConfig: clientConfig,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{"chaos.kooperkit.io"},
					APIVersions: []string{"v1beta1"},
					Resources:   []string{"podterminators"},
					Scope:       ptr.To(admissionregistrationv1.ClusterScope),
				},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "spec-changed",
				Expression: "request.operation == 'CREATE' || object.spec != oldObject.spec",
			}},
			// A write through v1alpha1 is converted (by the conversion
			// webhook) and sent here as v1beta1: the webhook reads one
			// version.
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
}
