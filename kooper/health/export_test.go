package health

import (
	"testing"
	"time"
)

// SetLimitsForTest makes the servers started until t ends use these
// timeouts (the TLS handshake takes the smallest) and header limit.
func SetLimitsForTest(t testing.TB, readHeader, read, write, idle time.Duration, maxHeaderBytes int) {
	t.Helper()
	old := limits
	limits = serverLimits{readHeader: readHeader, read: read, write: write, idle: idle, maxHeaderBytes: maxHeaderBytes}
	t.Cleanup(func() { limits = old })
}
