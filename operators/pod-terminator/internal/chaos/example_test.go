package chaos_test

import (
	"fmt"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
)

// Ten live pods, 30% per period, never below eight.
func ExampleCount() {
	p := chaos.Policy{Percent: 30, Minimum: 8}
	for _, live := range []int{10, 9, 8, 20} {
		fmt.Printf("%d live: terminate %d\n", live, chaos.Count(live, p))
	}
	// Output:
	// 10 live: terminate 2
	// 9 live: terminate 1
	// 8 live: terminate 0
	// 20 live: terminate 6
}
