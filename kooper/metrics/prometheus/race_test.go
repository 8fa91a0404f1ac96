//go:build race

package prometheus_test

func init() { raceEnabled = true }
