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
// No confused deputy: the operator deletes pods with its own rights, which
// reach every namespace, so a PodTerminator would let whoever may write one
// delete pods they could not delete themselves. On a create, and on an
// update that makes a PodTerminator more destructive (any change of its
// selector or namespaces, its dry run turned off, a higher percentage, a
// lower minimum, a shorter period, Delete instead of Eviction), the webhook
// asks the API server (Access, a SubjectAccessReview) whether the
// requesting user, with their groups and extra, may delete pods in each
// targeted namespace, or cluster-wide when the list is empty. When they may
// not, or the question cannot be answered, it refuses. An update that only
// makes it less destructive is not checked: the operator deletes no more
// than the writer of the old spec was allowed to. Without the webhook
// installed nothing checks this: grant create and update on podterminators
// only to those who may delete the pods anyway.
//
// Anyone who can reach the webhook can send it an AdmissionReview in any
// user's name, so a refusal tells no more than the request holds: the user,
// the targets as a whole and the changes, never which targeted namespaces
// the user may delete pods in. Every targeted namespace is asked about,
// whatever the earlier answers, so that the answer carries one bit (may
// delete pods in all of them, or not), at the cost of at most
// 1+validation.MaxNamespaces questions per review.
//
// An update that leaves the spec unchanged (the operator adding or removing
// its finalizer, a label, an annotation; its status writes go to the status
// subresource, which the webhook does not see) is always allowed, and so is
// any update of an object being deleted, which the operator no longer acts
// on: tightening the rules must never stop the operator from removing its
// finalizer from an object created under the old rules.
//
// Answers stay small whatever the object's size: validation.Validate bounds
// its message, and the access check runs only on a valid spec (at most
// validation.MaxNamespaces namespaces) and names at most a few of them.
//
// # What a caller can make it spend
//
// The API server does not authenticate to a webhook unless the cluster is
// set up to, so anyone who reaches the port can send reviews, each in any
// user's name and costing up to 1+validation.MaxNamespaces questions to the
// API server. What one caller, or all of them, can make the webhook spend is
// bounded whoever they are (limits.go): MaxReviews reviews at once, the
// others answered 429 at once; MaxBodyBytes per body, read before decoding;
// MaxReviewTime per review, so that the API server hears back within its
// timeout, a refusal when the questions could not all be answered in time;
// a log line per failure and LogInterval, not per request. Give Access a
// client with a rate limiter of its own (the operator does): a flood then
// waits behind that limiter only, and nothing else of the operator waits
// behind the flood.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	kwhhttp "github.com/slok/kubewebhook/v2/pkg/http"
	kwhlog "github.com/slok/kubewebhook/v2/pkg/log"
	kwhmodel "github.com/slok/kubewebhook/v2/pkg/model"
	kwhvalidating "github.com/slok/kubewebhook/v2/pkg/webhook/validating"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/bounded"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

// Path is the URL path the webhook is served on; the
// ValidatingWebhookConfiguration's clientConfig points at it.
const Path = "/validate/podterminators"

// Config configures the webhook.
type Config struct {
	// Rules are the checks' settings (protected namespaces, the operator's
	// pod labels).
	Rules validation.Rules
	// Access answers whether the requesting user may delete the pods a
	// PodTerminator targets, e.g. SubjectAccessReviews. Required: there is
	// no default, as allowing everyone is what it prevents.
	Access Access
	// Logger receives the webhook's logs. Default log.Noop.
	Logger log.Logger
	// Clock times the log lines held back (LogInterval). Default the real
	// clock.
	Clock clock.PassiveClock
}

// ErrInvalidConfig is wrapped by New's errors about its Config.
var ErrInvalidConfig = errors.New("invalid webhook config")

// New returns the webhook's HTTP handler, within the limits of the
// package documentation.
func New(cfg Config) (http.Handler, error) {
	if cfg.Access == nil {
		return nil, fmt.Errorf("%w: Access is required", ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = log.Noop
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	v := validator{rules: cfg.Rules, access: cfg.Access, log: cfg.Logger, accessFailed: bounded.NewThrottle(cfg.Clock)}
	kwhLog := kwhLogger{l: cfg.Logger, failed: bounded.NewThrottle(cfg.Clock)}
	wh, err := kwhvalidating.NewWebhook(kwhvalidating.WebhookConfig{
		ID:        Name,
		Obj:       &chaosv1beta1.PodTerminator{},
		Validator: kwhvalidating.ValidatorFunc(v.validate),
		Logger:    kwhLog,
	})
	if err != nil {
		return nil, fmt.Errorf("could not create the validating webhook: %w", err)
	}
	h, err := kwhhttp.HandlerFor(kwhhttp.HandlerConfig{Webhook: wh, Logger: kwhLog})
	if err != nil {
		return nil, fmt.Errorf("could not create the webhook handler: %w", err)
	}
	return newLimits(h, cfg.Logger, cfg.Clock), nil
}

type validator struct {
	rules  validation.Rules
	access Access
	log    log.Logger
	// accessFailed throttles the warnings about failed access checks.
	accessFailed *bounded.Throttle
}

// region: validate
func (v validator) validate(ctx context.Context, ar *kwhmodel.AdmissionReview, obj metav1.Object) (*kwhvalidating.ValidatorResult, error) {
	pt, ok := obj.(*chaosv1beta1.PodTerminator)
	if !ok {
		return nil, fmt.Errorf("got a %T, want a PodTerminator", obj)
	}
	if pt.DeletionTimestamp != nil {
		return &kwhvalidating.ValidatorResult{Valid: true}, nil
	}
	var old *chaosv1beta1.PodTerminator
	if ar.Operation == kwhmodel.OperationUpdate && len(ar.OldObjectRaw) > 0 {
		old = &chaosv1beta1.PodTerminator{}
		if err := json.Unmarshal(ar.OldObjectRaw, old); err != nil {
			return nil, fmt.Errorf("could not decode the old PodTerminator: %w", err)
		}
		if equality.Semantic.DeepEqual(old.Spec, pt.Spec) {
			return &kwhvalidating.ValidatorResult{Valid: true}, nil
		}
	}
	warnings, err := validation.Validate(&pt.Spec, v.rules)
	if err != nil {
		v.log.Debug("podterminator refused", "object", pt.Name, "err", err)
		return &kwhvalidating.ValidatorResult{Valid: false, Message: err.Error()}, nil
	}
	// Whoever makes the operator delete more pods needs the right to delete
	// them: on a create, or an update making it more destructive.
	var changes []string
	if old != nil {
		if changes = v.moreDestructive(&old.Spec, &pt.Spec); len(changes) == 0 {
			return &kwhvalidating.ValidatorResult{Valid: true, Warnings: warnings}, nil
		}
	}
	if denied := v.mayDeleteTargets(ctx, ar.UserInfo, pt.Spec.Namespaces, changes); denied != "" {
		v.log.Debug("podterminator refused", "object", pt.Name, "err", denied)
		return &kwhvalidating.ValidatorResult{Valid: false, Message: denied}, nil
	}
	return &kwhvalidating.ValidatorResult{Valid: true, Warnings: warnings}, nil
}

// endregion: validate

// maxNamed is how many targeted namespaces a refusal names; it counts the
// rest.
const maxNamed = 5

// mayDeleteTargets returns why user may not have the pods of namespaces
// (every namespace when empty) deleted in their name, or "" if they may.
// changes are how an update makes the PodTerminator more destructive, nil
// on a create. The answer depends on the access checks by one bit only (see
// the package doc): every namespace is asked about, and the refusal names
// them all as the request does, never which were denied. One question
// cluster-wide first answers for most admins at once; namespaces has passed
// validation.Validate, so there are at most 1+validation.MaxNamespaces.
func (v validator) mayDeleteTargets(ctx context.Context, user authenticationv1.UserInfo, namespaces, changes []string) string {
	everywhere, err := v.access.MayDeletePods(ctx, user, metav1.NamespaceAll)
	if err != nil {
		return v.unknownAccess(user, err)
	}
	if everywhere {
		return ""
	}
	all := len(namespaces) > 0
	for _, ns := range namespaces {
		ok, err := v.access.MayDeletePods(ctx, user, ns)
		if err != nil {
			return v.unknownAccess(user, err)
		}
		all = all && ok
	}
	if all {
		return ""
	}
	targets := "every namespace (spec.namespaces is empty)"
	if len(namespaces) > 0 {
		named := make([]string, 0, maxNamed)
		for _, ns := range namespaces[:min(len(namespaces), maxNamed)] {
			named = append(named, strconv.Quote(ns))
		}
		targets = strings.Join(named, ", ")
		if rest := len(namespaces) - len(named); rest > 0 {
			targets += fmt.Sprintf(" and %d more", rest)
		}
	}
	why := "creating one needs that permission"
	if len(changes) > 0 {
		why = fmt.Sprintf("making one more destructive (%s) needs that permission", strings.Join(changes, ", "))
	}
	return fmt.Sprintf("user %q may not delete pods in every namespace this PodTerminator targets: %s; a PodTerminator deletes pods in your name, so %s", user.Username, targets, why)
}

// unknownAccess is the refusal when whether user may delete pods could not
// be checked: fail closed. The error is logged, not answered: it is about
// the operator's own access to the API server, none of the caller's
// business.
func (v validator) unknownAccess(user authenticationv1.UserInfo, err error) string {
	v.accessFailed.Log(v.log.Warn, "could not check access", "err", err)
	return fmt.Sprintf("could not check whether user %q may delete pods in every namespace this PodTerminator targets, which it needs, so it is refused; try again later", user.Username)
}

// kwhLogger writes kubewebhook's logs to a Kooper logger. Its warnings and
// errors are about a review each (a malformed body, say), which anyone can
// send: one line per LogInterval goes through, whatever their words.
type kwhLogger struct {
	l      log.Logger
	failed *bounded.Throttle
}

func (k kwhLogger) Infof(format string, args ...any) { k.l.Debug(fmt.Sprintf(format, args...)) }
func (k kwhLogger) Warningf(format string, args ...any) {
	k.failed.Log(k.l.Warn, fmt.Sprintf(format, args...))
}
func (k kwhLogger) Errorf(format string, args ...any) {
	k.failed.Log(k.l.Error, fmt.Sprintf(format, args...))
}
func (k kwhLogger) Debugf(format string, args ...any) { k.l.Debug(fmt.Sprintf(format, args...)) }
func (k kwhLogger) WithValues(kv map[string]any) kwhlog.Logger {
	args := make([]any, 0, 2*len(kv))
	for key, v := range kv {
		args = append(args, key, v)
	}
	return kwhLogger{l: k.l.With(args...), failed: k.failed}
}
func (k kwhLogger) WithCtxValues(ctx context.Context) kwhlog.Logger {
	return k.WithValues(kwhlog.ValuesFromCtx(ctx))
}
func (k kwhLogger) SetValuesOnCtx(parent context.Context, values map[string]any) context.Context {
	return kwhlog.CtxWithValues(parent, values)
}
