package conversion_test

import (
	"errors"
	"testing"

	"github.com/kooperkit/kooper/operators/internal/conversion"
)

func TestAReplicaServingWebhooksIsReadyBeforeItsControllerSynced(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     string
		err        error
		wantStatus string
	}{
		{"leading, synced", "leading", nil, "leading"},
		{"standby, synced", "standby", nil, "standby"},
		{"leading, not synced", "", errors.New("leading, caches not synced yet: podterminators: the server could not find the requested resource"),
			"serving the webhooks; leading, caches not synced yet: podterminators: the server could not find the requested resource"},
		{"standby, not synced", "", errors.New("standby, caches not synced yet"), "serving the webhooks; standby, caches not synced yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := conversion.ReadyWhileServing(func() (string, error) { return tc.status, tc.err })
			status, err := ready()
			if err != nil || status != tc.wantStatus {
				t.Errorf("got %q, %v; want %q, ready", status, err, tc.wantStatus)
			}
		})
	}
}
