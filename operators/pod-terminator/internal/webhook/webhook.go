// Package webhook is the pod-terminator's validating admission webhook,
// built with github.com/slok/kubewebhook/v2. It refuses PodTerminators that
// fail internal/validation's checks (what the CRD schema and CEL cannot say)
// with the checks' own messages, and passes their warnings on, which kubectl
// prints as "Warning: ...".
//
// The API server calls it over TLS only: see internal/certs for where the
// serving certificate comes from, and manifests/pod-terminator for the
// ValidatingWebhookConfiguration that registers it.
//
// An update that leaves the spec unchanged (adding or removing a finalizer,
// a label, an annotation) is always allowed, and so is any update of an
// object being deleted: tightening the rules must never stop the operator
// from removing its finalizer from an object created under the old rules.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	kwhhttp "github.com/slok/kubewebhook/v2/pkg/http"
	kwhlog "github.com/slok/kubewebhook/v2/pkg/log"
	kwhmodel "github.com/slok/kubewebhook/v2/pkg/model"
	kwhvalidating "github.com/slok/kubewebhook/v2/pkg/webhook/validating"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

// Path is the URL path the webhook is served on; the
// ValidatingWebhookConfiguration's clientConfig points at it.
const Path = "/validate/podterminators"

// New returns the webhook's HTTP handler: it validates PodTerminators
// against rules and logs to logger (nil: log.Noop).
func New(rules validation.Rules, logger log.Logger) (http.Handler, error) {
	if logger == nil {
		logger = log.Noop
	}
	v := validator{rules: rules, log: logger}
	wh, err := kwhvalidating.NewWebhook(kwhvalidating.WebhookConfig{
		ID:        "podterminators.chaos.kooperkit.io",
		Obj:       &chaosv1alpha1.PodTerminator{},
		Validator: kwhvalidating.ValidatorFunc(v.validate),
		Logger:    kwhLogger{logger},
	})
	if err != nil {
		return nil, fmt.Errorf("could not create the validating webhook: %w", err)
	}
	h, err := kwhhttp.HandlerFor(kwhhttp.HandlerConfig{Webhook: wh, Logger: kwhLogger{logger}})
	if err != nil {
		return nil, fmt.Errorf("could not create the webhook handler: %w", err)
	}
	return h, nil
}

type validator struct {
	rules validation.Rules
	log   log.Logger
}

// region: validate
func (v validator) validate(_ context.Context, ar *kwhmodel.AdmissionReview, obj metav1.Object) (*kwhvalidating.ValidatorResult, error) {
	pt, ok := obj.(*chaosv1alpha1.PodTerminator)
	if !ok {
		return nil, fmt.Errorf("got a %T, want a PodTerminator", obj)
	}
	if pt.DeletionTimestamp != nil {
		return &kwhvalidating.ValidatorResult{Valid: true}, nil
	}
	if ar.Operation == kwhmodel.OperationUpdate && len(ar.OldObjectRaw) > 0 {
		var old chaosv1alpha1.PodTerminator
		if err := json.Unmarshal(ar.OldObjectRaw, &old); err != nil {
			return nil, fmt.Errorf("could not decode the old PodTerminator: %w", err)
		}
		if equality.Semantic.DeepEqual(old.Spec, pt.Spec) {
			return &kwhvalidating.ValidatorResult{Valid: true}, nil
		}
	}
	warnings, err := validation.Validate(&pt.Spec, v.rules)
	if err != nil {
		v.log.Debug("podterminator refused", log.KeyObject, pt.Name, log.KeyErr, err)
		return &kwhvalidating.ValidatorResult{Valid: false, Message: err.Error()}, nil
	}
	return &kwhvalidating.ValidatorResult{Valid: true, Warnings: warnings}, nil
}

// endregion: validate

// kwhLogger writes kubewebhook's logs to a Kooper logger.
type kwhLogger struct{ l log.Logger }

func (k kwhLogger) Infof(format string, args ...any) { k.l.Debug(fmt.Sprintf(format, args...)) }
func (k kwhLogger) Warningf(format string, args ...any) {
	k.l.Warn(fmt.Sprintf(format, args...))
}
func (k kwhLogger) Errorf(format string, args ...any) { k.l.Error(fmt.Sprintf(format, args...)) }
func (k kwhLogger) Debugf(format string, args ...any) { k.l.Debug(fmt.Sprintf(format, args...)) }
func (k kwhLogger) WithValues(kv map[string]any) kwhlog.Logger {
	args := make([]any, 0, 2*len(kv))
	for key, v := range kv {
		args = append(args, key, v)
	}
	return kwhLogger{k.l.With(args...)}
}
func (k kwhLogger) WithCtxValues(ctx context.Context) kwhlog.Logger {
	return k.WithValues(kwhlog.ValuesFromCtx(ctx))
}
func (k kwhLogger) SetValuesOnCtx(parent context.Context, values map[string]any) context.Context {
	return kwhlog.CtxWithValues(parent, values)
}
