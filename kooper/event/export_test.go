package event

import "k8s.io/utils/clock"

// NewWithClock is New with the retries of unanswered writes, and the
// correlation unless cfg.Correlator.Clock is set, timed by c.
func NewWithClock(cfg Config, c clock.Clock) (*Recorder, error) {
	cfg.clock = c
	return New(cfg)
}
