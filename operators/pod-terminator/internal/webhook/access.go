package webhook

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Access tells whether a user may delete pods. The webhook asks it as the
// user who writes a PodTerminator, because the operator then deletes pods
// in that user's name.
type Access interface {
	// MayDeletePods reports whether user may delete pods in namespace, or
	// in every namespace when namespace is "". An error means the answer is
	// unknown: the webhook then refuses.
	MayDeletePods(ctx context.Context, user authenticationv1.UserInfo, namespace string) (bool, error)
}

// AccessFunc adapts a function to Access.
type AccessFunc func(ctx context.Context, user authenticationv1.UserInfo, namespace string) (bool, error)

// MayDeletePods implements Access.
func (f AccessFunc) MayDeletePods(ctx context.Context, user authenticationv1.UserInfo, namespace string) (bool, error) {
	return f(ctx, user, namespace)
}

// SubjectAccessReviews is Access asking the API server with a
// SubjectAccessReview: its own authorizers (RBAC and any other) answer as
// they would for the user's own request. The caller needs the RBAC verb
// create on subjectaccessreviews.authorization.k8s.io.
type SubjectAccessReviews struct {
	// Client creates the reviews, e.g. a clientset's AuthorizationV1().
	// Required.
	Client authorizationv1client.SubjectAccessReviewsGetter
}

var _ Access = SubjectAccessReviews{}

// MayDeletePods implements Access.
func (s SubjectAccessReviews) MayDeletePods(ctx context.Context, user authenticationv1.UserInfo, namespace string) (bool, error) {
	var extra map[string]authorizationv1.ExtraValue
	if len(user.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	review, err := s.Client.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user.Username,
			UID:    user.UID,
			Groups: user.Groups,
			Extra:  extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace,
				Verb:      "delete",
				Resource:  "pods",
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("could not create a SubjectAccessReview: %w", err)
	}
	// An EvaluationError without Allowed (a binding to a missing role, say)
	// is a "no": the user's own request would be refused the same way.
	return review.Status.Allowed, nil
}
