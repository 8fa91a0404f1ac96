package webhook_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

func TestSubjectAccessReviewsAskAsTheUser(t *testing.T) {
	user := authenticationv1.UserInfo{
		Username: "alice", UID: "42", Groups: []string{"team-a"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"pods"}},
	}
	tests := []struct {
		name      string
		namespace string
		allowed   bool
		err       error
	}{
		{name: "allowed in a namespace", namespace: "shop", allowed: true},
		{name: "denied cluster-wide", namespace: ""},
		{name: "the review fails", namespace: "shop", err: errors.New("etcd is down")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			var got authorizationv1.SubjectAccessReviewSpec
			client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				got = sar.Spec
				return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: tt.allowed}}, tt.err
			})
			allowed, err := webhook.SubjectAccessReviews{Client: client.AuthorizationV1()}.MayDeletePods(context.Background(), user, tt.namespace)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("got error %v, want %v", err, tt.err)
			}
			if allowed != tt.allowed {
				t.Errorf("got allowed %v, want %v", allowed, tt.allowed)
			}
			want := authorizationv1.SubjectAccessReviewSpec{
				User: "alice", UID: "42", Groups: []string{"team-a"},
				Extra:              map[string]authorizationv1.ExtraValue{"scopes": {"pods"}},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tt.namespace, Verb: "delete", Resource: "pods"},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got review %+v, want %+v", got, want)
			}
		})
	}
}
