package prometheus_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kooperkit/kooper/kooper/controller"
	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// New registers every controller metric on the registry it is given. The
// first call naming a controller creates its series; the leader gauge
// appears once a leader election runner calls SetLeader.
func ExampleNew() {
	// region: new
	reg := prometheus.NewRegistry()
	rec, err := kooperprom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	var _ controller.MetricsRecorder = rec // what a controller.Config takes

	rec.IncQueuedEvent("pod-terminator", "change")
	rec.SetLeader("pod-terminator", true)

	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		fmt.Println(mf.GetName(), mf.GetType())
	}
	// endregion: new

	// Output:
	// kooper_controller_cache_wait_seconds HISTOGRAM
	// kooper_controller_dropped_total COUNTER
	// kooper_controller_handle_duration_seconds HISTOGRAM
	// kooper_controller_handler_panics_total COUNTER
	// kooper_controller_leader GAUGE
	// kooper_controller_queue_length GAUGE
	// kooper_controller_queue_wait_seconds HISTOGRAM
	// kooper_controller_queued_events_total COUNTER
	// kooper_controller_retries_total COUNTER
	// kooper_controller_retrieve_errors_total COUNTER
}

// One Recorder serves every controller of a process; their series differ by
// the controller label.
func ExampleRecorder_shared() {
	reg := prometheus.NewRegistry()
	rec, err := kooperprom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}

	rec.ObserveHandling("pods", true, 30*time.Millisecond)
	rec.ObserveHandling("pods", false, 3*time.Second)
	rec.ObserveHandling("nodes", true, 400*time.Millisecond)

	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		if mf.GetName() != "kooper_controller_handle_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := m.GetLabel() // sorted by name: controller, success
			h := m.GetHistogram()
			fmt.Printf("controller=%s success=%s count=%d sum=%gs\n",
				l[0].GetValue(), l[1].GetValue(), h.GetSampleCount(), h.GetSampleSum())
		}
	}
	// Output:
	// controller=nodes success=false count=0 sum=0s
	// controller=nodes success=true count=1 sum=0.4s
	// controller=pods success=false count=1 sum=3s
	// controller=pods success=true count=1 sum=0.03s
}

// Queued keys are counted by where they came from. A source of a
// controller (controller.Owns) queues an owner's key on a child's change
// with Controller.Enqueue: it is counted under the owner's controller,
// with source "enqueue".
func ExampleRecorder_IncQueuedEvent() {
	reg := prometheus.NewRegistry()
	rec, err := kooperprom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}

	rec.IncQueuedEvent("tenants", "initial")
	rec.IncQueuedEvent("tenants", "initial")
	rec.IncQueuedEvent("tenants", "enqueue") // a child changed
	rec.IncQueuedEvent("tenants", "retry")

	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		if mf.GetName() != "kooper_controller_queued_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := m.GetLabel() // sorted by name: controller, source
			fmt.Printf("controller=%s source=%s %g\n", l[0].GetValue(), l[1].GetValue(), m.GetCounter().GetValue())
		}
	}
	// Output:
	// controller=tenants source=change 0
	// controller=tenants source=enqueue 1
	// controller=tenants source=initial 2
	// controller=tenants source=requeue 0
	// controller=tenants source=resync 0
	// controller=tenants source=retry 1
}

// A sharded replica reports the slots it owns, labelled with its mode, and
// the slots of its group: summed over the replicas, the first equals the
// second once the slots have settled. A new mode, such as the detected one
// after "" (sharding.ModeAuto), replaces the old mode's series.
func ExampleRecorder_SetShards() {
	reg := prometheus.NewRegistry()
	rec, err := kooperprom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	var _ sharding.Recorder = rec // what a sharding.Config takes

	rec.SetShards("tenants", "", 0, 32) // the mode not detected yet
	rec.SetShards("tenants", "server-side", 11, 32)

	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "kooper_sharding_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Println(mf.GetName(), strings.Join(labels, " "), m.GetGauge().GetValue())
		}
	}
	// Output:
	// kooper_sharding_group_slots group=tenants 32
	// kooper_sharding_slots group=tenants mode=server-side 11
}

// A registry holds one Recorder. A second New on the same registry fails
// with an error wrapping prometheus.AlreadyRegisteredError: share the first
// Recorder instead.
func ExampleNew_alreadyRegistered() {
	reg := prometheus.NewRegistry()
	if _, err := kooperprom.New(reg); err != nil {
		fmt.Println(err)
		return
	}

	_, err := kooperprom.New(reg)
	fmt.Println(errors.As(err, new(prometheus.AlreadyRegisteredError)))
	fmt.Println(err)
	// Output:
	// true
	// could not register controller metrics, share one Recorder per registry instead of creating another: duplicate metrics collector registration attempted
}
