package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/logkey"
	"github.com/kooperkit/kooper/kooper/log"
)

// Kinds of list or watch failure, passed to MetricsRecorder.IncRetrieveError.
const (
	// retrieveDecode is an answer that could not be decoded into the
	// Retriever's Go type, typically one object with a field the type cannot
	// hold: retrying does not help until the object (or the type) changes.
	retrieveDecode = "decode"
	// retrieveAPI is any other failed list or watch: an error status
	// from the API server, or a request that could not reach it.
	retrieveAPI = "api"
)

// retrieveErrorLogInterval is how often the same list or watch failure is
// logged again while it lasts. The reflector retries every 30 seconds at
// most; a failure that never goes away (an object that cannot be decoded)
// would otherwise be logged forever at that pace.
const retrieveErrorLogInterval = 5 * time.Minute

// keyResource names, in logs, what a Retriever retrieves (see describe).
const keyResource = "resource"

// clientWatchDecoding is the cause type client-go gives the error status it
// makes up when it cannot decode a watch event (rest.Request.Watch).
const clientWatchDecoding = "ClientWatchDecoding"

// retrieveErrors remembers, counts and logs one controller's failed lists
// and watches, which client-go's reflector retries forever with backoff.
type retrieveErrors struct {
	controller string
	resource   string // describe(Retriever), or "" when unknown
	log        log.Logger
	rec        MetricsRecorder
	clock      clock.PassiveClock

	mu sync.Mutex
	// last is the newest failure, as SyncError returns it.
	last error
	// logged is the message of the failure last logged, at loggedAt;
	// suppressed counts failures not logged since.
	logged     string
	loggedAt   time.Time
	suppressed int
}

// record handles one error from the reflector: a closed or expired watch,
// which the reflector restarts at once, is only logged at Debug; anything
// else is counted, kept for SyncError, and logged unless the same failure
// was logged less than retrieveErrorLogInterval ago.
func (r *retrieveErrors) record(ctx context.Context, err error) {
	switch {
	case ctx.Err() != nil:
		return // stopping: the error is the cancellation
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		r.log.Debug("watch closed, re-watching", logkey.Err, err)
		return
	}
	decode := isDecodeError(err)
	kind := retrieveAPI
	if decode {
		kind = retrieveDecode
	}
	r.rec.IncRetrieveError(r.controller, kind)

	what := r.resource
	if what == "" {
		what = "objects"
	}
	var kept error
	if decode {
		kept = fmt.Errorf("%s: %w of %s: %w", r.controller, ErrDecode, what, err)
	} else {
		kept = fmt.Errorf("%s: could not list or watch %s: %w", r.controller, what, err)
	}

	r.mu.Lock()
	r.last = kept
	now := r.clock.Now()
	msg := err.Error()
	if msg == r.logged && now.Sub(r.loggedAt) < retrieveErrorLogInterval {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	suppressed := r.suppressed
	r.logged, r.loggedAt, r.suppressed = msg, now, 0
	r.mu.Unlock()

	if decode {
		// Error: nothing of this type is handled until someone fixes or
		// deletes the object, or the type.
		r.log.Error("could not decode retrieved objects, retrying", keyResource, r.resource, "suppressed", suppressed, logkey.Err, err)
		return
	}
	r.log.Warn("list or watch failed, retrying", keyResource, r.resource, "suppressed", suppressed, logkey.Err, err)
}

// lastError returns the newest failure recorded, or nil.
func (r *retrieveErrors) lastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// handler returns record as a client-go watch error handler.
func (r *retrieveErrors) handler() cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, _ *cache.Reflector, err error) { r.record(ctx, err) }
}

// isDecodeError reports whether err says that a list or watch answer could
// not be decoded, as opposed to a request that failed. client-go returns the
// serializer's errors as they are (after the reflector's "failed to list
// <type>: "), and reports a watch event it could not decode as an error
// status of its own, with cause type ClientWatchDecoding; any other status
// is the API server's answer.
func isDecodeError(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				if c.Type == clientWatchDecoding {
					return true
				}
			}
		}
		return false
	}
	var (
		syntax    *json.SyntaxError
		typ       *json.UnmarshalTypeError
		invalid   *json.InvalidUnmarshalError
		timeParse *time.ParseError
	)
	switch {
	case errors.As(err, &syntax), errors.As(err, &typ), errors.As(err, &invalid), errors.As(err, &timeParse):
		return true
	case errors.Is(err, resource.ErrFormatWrong), errors.Is(err, resource.ErrNumeric), errors.Is(err, resource.ErrSuffix):
		return true
	}
	return anyInChain(err, func(e error) bool {
		if runtime.IsNotRegisteredError(e) || runtime.IsMissingKind(e) || runtime.IsMissingVersion(e) ||
			runtime.IsStrictDecodingError(e) {
			return true
		}
		// Errors that exist only as text: sigs.k8s.io/json's (an internal
		// copy of encoding/json, whose types cannot be named here), the JSON
		// serializer's kind sniffing, and client-go's watch and metadata
		// decoders. client-go does not promise these words:
		// TestPinDecodeErrorsOfClientGosClientsAreToldApart decodes bad
		// answers with client-go's real clients and fails if they change.
		msg := e.Error()
		return strings.HasPrefix(msg, "json: ") ||
			strings.HasPrefix(msg, "couldn't get version/kind; json parse error") ||
			strings.HasPrefix(msg, "unable to decode")
	})
}

// anyInChain reports whether match holds for err or any error it wraps.
func anyInChain(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch u := err.(type) { //nolint:errorlint // walking the chain itself
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if anyInChain(e, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
