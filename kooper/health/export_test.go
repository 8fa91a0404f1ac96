package health

import (
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// SetLimitsForTest makes the servers started until t ends use these
// timeouts (the TLS handshake takes the smallest) and header limit.
func SetLimitsForTest(t testing.TB, readHeader, read, write, idle time.Duration, maxHeaderBytes int) {
	t.Helper()
	old := limits
	limits = serverLimits{readHeader: readHeader, read: read, write: write, idle: idle, maxHeaderBytes: maxHeaderBytes}
	t.Cleanup(func() { limits = old })
}

// SetClockForTest makes the SecureMetrics started until t ends time their
// cached decisions and their log lines with c.
func SetClockForTest(t testing.TB, c clock.PassiveClock) {
	t.Helper()
	old := secureClock
	secureClock = c
	t.Cleanup(func() { secureClock = old })
}
