package controller

import "k8s.io/utils/clock"

// WithClock returns cfg with clk driving every wait and timestamp of the
// controller built from it, for the package's tests.
func WithClock(cfg Config, clk clock.WithTickerAndDelayedExecution) Config {
	cfg.clock = clk
	return cfg
}
