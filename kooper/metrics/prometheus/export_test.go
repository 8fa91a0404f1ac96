package prometheus

import prom "github.com/prometheus/client_golang/prometheus"

// NewWithBuckets is New with histograms of the given buckets instead of
// the 16 of the package documentation, for tests that compare the whole
// output.
func NewWithBuckets(reg prom.Registerer, buckets []float64) (*Recorder, error) {
	return newRecorder(reg, buckets)
}
