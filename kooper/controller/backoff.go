package controller

import (
	"math/rand/v2"
	"sync"
	"time"
)

// backoff is a per-key exponential rate limiter with jitter for the
// workqueue. Forget, called on every success, resets a key: a later failure
// starts again from the base delay and the full retry budget.
type backoff struct {
	base, max time.Duration
	mu        sync.Mutex
	failures  map[string]int
}

func newBackoff(base, max time.Duration) *backoff {
	return &backoff{base: base, max: max, failures: map[string]int{}}
}

// When returns the delay before retrying key and counts one more failure.
func (b *backoff) When(key string) time.Duration {
	b.mu.Lock()
	n := b.failures[key]
	b.failures[key] = n + 1
	b.mu.Unlock()
	d := b.base
	for i := 0; i < n && d < b.max; i++ {
		d *= 2
	}
	// Up to +20% jitter, so retries of objects that failed together spread.
	d += time.Duration(rand.Int64N(int64(d)/5 + 1))
	return min(d, b.max)
}

// Forget resets key's failure count.
func (b *backoff) Forget(key string) {
	b.mu.Lock()
	delete(b.failures, key)
	b.mu.Unlock()
}

// NumRequeues returns how many failures of key were counted since it was
// last forgotten.
func (b *backoff) NumRequeues(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[key]
}
