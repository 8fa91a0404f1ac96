package dashboards

import (
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/kooperkit/kooper/grafana/internal/catalog"
)

// Dashboard is one Grafana dashboard, as definitions.go writes it: Grafana
// builds it with the SDK, Markdown documents it.
type Dashboard struct {
	// UID is Grafana's stable identifier, also the JSON file's base name.
	UID         string
	Title       string
	Description string
	// Controllers is the regular expression the controller variable's
	// values are picked from: an operator's controller names. "" is every
	// controller, and then All is ".+" instead of the list of values.
	Controllers string
	Rows        []Row
}

// Row is a titled group of panels, laid out three to a line.
type Row struct {
	Title  string
	Panels []Panel
}

// Panel is one time series chart.
type Panel struct {
	Title string
	// Description is shown in the panel's tooltip and in the docs.
	Description string
	// Unit is a Grafana unit: a constant of the SDK's package units,
	// such as units.Seconds.
	Unit    string
	Targets []Target
}

// Target is one PromQL query of a panel.
type Target struct {
	Expr string
	// Legend is Grafana's legend format, e.g. "{{controller}}".
	Legend string
}

// Variables every dashboard has. Expressions use them as $datasource,
// $controller and Grafana's own $__rate_interval.
const (
	VarDatasource   = "datasource"
	VarController   = "controller"
	VarRateInterval = "$__rate_interval"
)

const queueLengthName = catalog.QueueLength

// ControllerVariableSelector is the series whose controller label values the
// controller variable offers (label_values in Grafana). Every controller
// has it from its first event.
func (d Dashboard) ControllerVariableSelector() string {
	if d.Controllers == "" {
		return queueLengthName
	}
	return fmt.Sprintf("%s{controller=~%q}", queueLengthName, d.Controllers)
}

// All returns the dashboards: the hand-written ones below (the library's,
// then the sample operators'), then, in the order of operators, a generic
// one for each operator that none of them has Controllers "<name>.*" for.
// A new operator thus has a dashboard without a line of Go; it keeps it
// until someone writes its own here.
func All(operators []string) []Dashboard {
	all := defined()
	for _, name := range operators {
		if !slices.ContainsFunc(all, func(d Dashboard) bool { return d.Controllers == name+".*" }) {
			all = append(all, generic(name))
		}
	}
	return all
}

// generic is the dashboard of an operator without its own: the controller
// panels every operator's dashboard has, for its controllers, which are
// named with the operator's name as prefix.
func generic(name string) Dashboard {
	return Dashboard{
		UID:   "kooper-" + name,
		Title: "Kooper / " + name,
		Description: fmt.Sprintf("The generic dashboard of the %[1]s operator's controllers: handlings, latency, queue length, errors, retries and leader election. "+
			"To replace it with your own panels, define a Dashboard with Controllers %[2]q in grafana/internal/dashboards/definitions.go and run make generate.", name, name+".*"),
		Controllers: name + ".*",
		Rows:        []Row{{Title: "Controllers", Panels: operatorControllerPanels()}},
	}
}

// defined returns the hand-written dashboards: the library's, then one per
// sample operator.
func defined() []Dashboard {
	return []Dashboard{
		{
			UID:         "kooper-controllers",
			Title:       "Kooper / Controllers",
			Description: "Every Kooper controller: its queue, handlings, errors, leader election, sharding, and the API requests of its process.",
			Rows: []Row{
				{Title: "Queue", Panels: queuePanels()},
				{Title: "Handling", Panels: handlingPanels()},
				{Title: "Leader election and API server requests", Panels: append([]Panel{leaderPanel(), retrievePanel()}, restPanels()...)},
				{Title: "Sharding", Panels: shardingPanels()},
				{Title: "Processes", Panels: processPanels()},
			},
		},
		// +kooper:operator-begin=pod-terminator
		{
			UID:         "kooper-pod-terminator",
			Title:       "Kooper / Pod terminator",
			Description: "The pod-terminator operator: pods terminated per PodTerminator, dry runs, and its controller.",
			Controllers: "pod-terminator.*",
			Rows: []Row{
				{Title: "Pods terminated", Panels: []Panel{
					{
						Title:       "Pods terminated per second, by PodTerminator",
						Description: "Pods deleted by each PodTerminator (dry_run=\"false\").",
						Unit:        units.OpsPerSecond,
						Targets: []Target{{
							Expr:   fmt.Sprintf(`sum by (terminator) (rate(%s{dry_run="false"}[%s]))`, catalog.TerminatedPods, VarRateInterval),
							Legend: "{{terminator}}",
						}},
					},
					{
						Title:       "Pods chosen in dry runs per second",
						Description: "Pods a dry-run PodTerminator would have deleted (dry_run=\"true\"): nothing was deleted.",
						Unit:        units.OpsPerSecond,
						Targets: []Target{{
							Expr:   fmt.Sprintf(`sum by (terminator) (rate(%s{dry_run="true"}[%s]))`, catalog.TerminatedPods, VarRateInterval),
							Legend: "{{terminator}} (dry run)",
						}},
					},
					{
						Title:       "Pods terminated in the last hour",
						Description: "Deleted pods over the last hour, by PodTerminator and dry run.",
						Unit:        units.Short,
						Targets: []Target{{
							Expr:   fmt.Sprintf(`sum by (terminator, dry_run) (increase(%s[1h]))`, catalog.TerminatedPods),
							Legend: "{{terminator}} dry_run={{dry_run}}",
						}},
					},
				}},
				{Title: "Controller", Panels: operatorControllerPanels()},
			},
		},
		// +kooper:operator-end=pod-terminator
		// +kooper:operator-begin=multi-resource
		// region: tenants
		{
			UID:         "kooper-tenants",
			Title:       "Kooper / Tenants",
			Description: "The multi-resource operator: Tenants ready and not ready, drift repairs of their children, and its controllers.",
			Controllers: "multi-resource.*",
			Rows: []Row{
				{Title: "Tenants", Panels: []Panel{
					{
						Title:       "Tenants ready and not ready",
						Description: "Tenants by their Ready condition, from the leader's cache (a standby reports nothing).",
						Unit:        units.Short,
						Targets: []Target{{
							Expr:   fmt.Sprintf(`sum by (ready) (%s)`, catalog.TenantsByReadiness),
							Legend: "ready={{ready}}",
						}},
					},
					{
						Title:       "Drift repairs per second, by kind",
						Description: "Children of Tenants restored after someone else changed or deleted them.",
						Unit:        units.OpsPerSecond,
						Targets: []Target{{
							Expr:   fmt.Sprintf(`sum by (kind) (rate(%s[%s]))`, catalog.DriftRepairs, VarRateInterval),
							Legend: "{{kind}}",
						}},
					},
					{
						Title:       "Drift repairs in the last hour",
						Description: "Children restored over the last hour, by kind.",
						Unit:        units.Short,
						Targets: []Target{{
							Expr:   fmt.Sprintf(`sum by (kind) (increase(%s[1h]))`, catalog.DriftRepairs),
							Legend: "{{kind}}",
						}},
					},
				}},
				{Title: "Controllers", Panels: operatorControllerPanels()},
			},
		},
		// endregion: tenants
		// +kooper:operator-end=multi-resource
	}
}

// sel is name{controller=~"$controller", extra...}.
func sel(name string, extra ...string) string {
	return name + "{" + strings.Join(append([]string{`controller=~"$` + VarController + `"`}, extra...), ", ") + "}"
}

// rate is rate(selector[$__rate_interval]).
func rate(selector string) string { return "rate(" + selector + "[" + VarRateInterval + "])" }

// quantile is the q-quantile of a histogram's buckets, by controller.
func quantile(q, histogram string) string {
	return fmt.Sprintf("histogram_quantile(%s, sum by (controller, le) (%s))", q, rate(sel(histogram+"_bucket")))
}

// kooperProcess keeps the series of processes running Kooper controllers,
// so runtime panels ignore other jobs.
func kooperProcess(expr string) string {
	return fmt.Sprintf("%s and on (job, instance) count by (job, instance) (%s)", expr, catalog.QueueLength)
}

func queuePanels() []Panel {
	return []Panel{
		{
			Title:       "Events per second",
			Description: "Keys added to each controller's queue, by source: initial (the cache's first list), change (an add, update or delete the watch saw), resync, retry (a failed handling), requeue (a RequeueAfter request), enqueue (routed from another controller).",
			Unit:        units.OpsPerSecond,
			Targets: []Target{{
				Expr:   "sum by (controller, source) (" + rate(sel(catalog.QueuedEvents)) + ")",
				Legend: "{{controller}} {{source}}",
			}},
		},
		{
			Title:       "Queue length",
			Description: "Keys waiting for a worker now. A queue that keeps growing means the workers cannot keep up.",
			Unit:        units.Short,
			Targets: []Target{{
				Expr:   "sum by (controller) (" + sel(catalog.QueueLength) + ")",
				Legend: "{{controller}}",
			}},
		},
		{
			Title:       "Time in queue (p50, p99)",
			Description: "How long keys waited before a worker took them: work waiting on workers, or retries waiting out their backoff.",
			Unit:        units.Seconds,
			Targets: []Target{
				{Expr: quantile("0.5", catalog.QueueWait), Legend: "{{controller}} p50"},
				{Expr: quantile("0.99", catalog.QueueWait), Legend: "{{controller}} p99"},
			},
		},
		{
			Title:       "Keys routed from other kinds per second",
			Description: "Keys queued with Controller.Enqueue (source=\"enqueue\"), by the controller whose queue took them: when a child changes, the controller's source of that kind (given to controller.New) queues its owner's key. Zero for a controller that owns nothing.",
			Unit:        units.OpsPerSecond,
			Targets: []Target{{
				Expr:   "sum by (controller) (" + rate(sel(catalog.QueuedEvents, `source="enqueue"`)) + ")",
				Legend: "{{controller}}",
			}},
		},
		{
			Title:       "Waits for the caches per second, by outcome",
			Description: "Keys held after their handler wrote (through a client of controller.TrackWrites) until the controller's caches had seen those writes: caught_up=true once they had, false when the wait reached its 10s bound and the key was handled anyway, maybe on a stale cache. Keys that did not wait are not counted; zero for a controller without TrackWrites.",
			Unit:        units.OpsPerSecond,
			Targets: []Target{{
				Expr:   "sum by (controller, caught_up) (" + rate(sel(catalog.CacheWait+"_count")) + ")",
				Legend: "{{controller}} caught_up={{caught_up}}",
			}},
		},
		{
			Title:       "Time waiting for the caches (p50, p99)",
			Description: "How long keys were held until the caches had seen their handler's writes, both outcomes together: a p99 at the 10s bound means a cache that lags or never sees the writes (an object its label selector no longer matches). Empty while no key waits.",
			Unit:        units.Seconds,
			Targets: []Target{
				{Expr: quantile("0.5", catalog.CacheWait), Legend: "{{controller}} p50"},
				{Expr: quantile("0.99", catalog.CacheWait), Legend: "{{controller}} p99"},
			},
		},
	}
}

func handlingPanels() []Panel {
	return []Panel{
		{
			Title:       "Handling latency (p50, p90, p99)",
			Description: "How long handler calls took, successful or not.",
			Unit:        units.Seconds,
			Targets: []Target{
				{Expr: quantile("0.5", catalog.HandleDuration), Legend: "{{controller}} p50"},
				{Expr: quantile("0.9", catalog.HandleDuration), Legend: "{{controller}} p90"},
				{Expr: quantile("0.99", catalog.HandleDuration), Legend: "{{controller}} p99"},
			},
		},
		{
			Title:       "Handlings per second, by outcome",
			Description: "Handler calls that returned nil (success=true) or an error or panicked (success=false).",
			Unit:        units.OpsPerSecond,
			Targets: []Target{{
				Expr:   "sum by (controller, success) (" + rate(sel(catalog.HandleDuration+"_count")) + ")",
				Legend: "{{controller}} success={{success}}",
			}},
		},
		{
			Title:       "Error ratio",
			Description: "Share of handler calls that failed. Empty while a controller handles nothing (0/0).",
			Unit:        units.PercentUnit,
			Targets: []Target{{
				Expr: "sum by (controller) (" + rate(sel(catalog.HandleDuration+"_count", `success="false"`)) + ")\n/\n" +
					"sum by (controller) (" + rate(sel(catalog.HandleDuration+"_count")) + ")",
				Legend: "{{controller}}",
			}},
		},
		{
			Title:       "Retries and drops per second",
			Description: "Failed handlings that will be retried, and keys given up on (max_retries, or a terminal error).",
			Unit:        units.OpsPerSecond,
			Targets: []Target{
				{Expr: "sum by (controller) (" + rate(sel(catalog.Retries)) + ")", Legend: "{{controller}} retry"},
				{Expr: "sum by (controller, reason) (" + rate(sel(catalog.Dropped)) + ")", Legend: "{{controller}} dropped {{reason}}"},
			},
		},
		{
			Title:       "Handler panics in the last hour",
			Description: "Panics recovered by the controller (the key is retried). Any is a bug in a handler.",
			Unit:        units.Short,
			Targets: []Target{{
				Expr:   "sum by (controller) (increase(" + sel(catalog.Panics) + "[1h]))",
				Legend: "{{controller}}",
			}},
		},
	}
}

func leaderPanel() Panel {
	return Panel{
		Title:       "Leader, by Lease and replica",
		Description: "1 for the replica holding each Lease (named like its controllers), 0 for standbys. The sum by Lease should be 1.",
		Unit:        units.Short,
		Targets: []Target{{
			Expr:   "max by (controller, instance) (" + sel(catalog.Leader) + ")",
			Legend: "{{controller}} {{instance}}",
		}},
	}
}

// shardingPanels chart the replicas of sharded controllers, by group (the
// sharding.Config.Name, not a controller's name: the controller variable
// does not apply).
func shardingPanels() []Panel {
	return []Panel{
		{
			Title:       "Slots owned per replica",
			Description: "Slots of each sharded group that each replica owns, and its mode. client-side: the API server cannot shard, so every replica lists and caches every object and handles its share only.",
			Unit:        units.Short,
			Targets: []Target{{
				Expr:   fmt.Sprintf("sum by (group, instance, mode) (%s)", catalog.ShardingSlots),
				Legend: "{{group}} {{instance}} {{mode}}",
			}},
		},
		{
			Title:       "Slots owned / total per group",
			Description: "Slots owned, summed over the replicas, against the group's slots. Below the total while slots move or after a replica vanished, until its Lease expires: objects of the unowned slots wait. Above it only for a scrape while a slot moves.",
			Unit:        units.Short,
			Targets: []Target{
				{Expr: fmt.Sprintf("sum by (group) (%s)", catalog.ShardingSlots), Legend: "{{group}} owned"},
				{Expr: fmt.Sprintf("max by (group) (%s)", catalog.ShardingGroupSlots), Legend: "{{group}} total"},
			},
		},
	}
}

func retrievePanel() Panel {
	return Panel{
		Title:       "Failed lists and watches per second, by kind",
		Description: "Lists and watches of a controller's cache that failed (client-go retries them). decode: an object its Go type cannot hold; nothing of that type is handled until it is fixed or deleted, and /readyz says which. api: the API server refused or could not be reached.",
		Unit:        units.OpsPerSecond,
		Targets: []Target{{
			Expr:   "sum by (controller, kind) (" + rate(sel(catalog.RetrieveErrors)) + ")",
			Legend: "{{controller}} {{kind}}",
		}},
	}
}

func restPanels() []Panel {
	return []Panel{
		{
			Title:       "API requests per second, by code and method",
			Description: "Requests of each process to the API server (every client of the process, not per controller).",
			Unit:        units.OpsPerSecond,
			Targets: []Target{{
				Expr:   fmt.Sprintf("sum by (job, code, method) (rate(%s[%s]))", catalog.RESTRequests, VarRateInterval),
				Legend: "{{job}} {{method}} {{code}}",
			}},
		},
		{
			Title:       "API request latency p99, by verb",
			Description: "Request latency as the client saw it, including the network.",
			Unit:        units.Seconds,
			Targets: []Target{{
				Expr:   fmt.Sprintf("histogram_quantile(0.99, sum by (job, verb, le) (rate(%s_bucket[%s])))", catalog.RESTLatency, VarRateInterval),
				Legend: "{{job}} {{verb}}",
			}},
		},
		{
			Title:       "Client rate limiter wait p99, by verb",
			Description: "Time requests waited for the client's own QPS and burst. Seconds here mean the -kube-api-qps flag is too low, or, in the pod-terminator, that its webhook or /metrics is flooded: their access checks go through clients of their own, with limits the flag does not set, so that leader election never waits behind them.",
			Unit:        units.Seconds,
			Targets: []Target{{
				Expr:   fmt.Sprintf("histogram_quantile(0.99, sum by (job, verb, le) (rate(%s_bucket[%s])))", catalog.RESTRateLimiter, VarRateInterval),
				Legend: "{{job}} {{verb}}",
			}},
		},
	}
}

func processPanels() []Panel {
	return []Panel{
		{
			Title:       "CPU, by process",
			Description: "CPU seconds per second of each process running Kooper controllers.",
			Unit:        units.Short,
			Targets: []Target{{
				Expr:   kooperProcess(fmt.Sprintf("rate(%s[%s])", catalog.ProcessCPU, VarRateInterval)),
				Legend: "{{job}} {{instance}}",
			}},
		},
		{
			Title:       "Memory, by process",
			Description: "Resident memory and live heap of each process running Kooper controllers.",
			Unit:        units.BytesIEC,
			Targets: []Target{
				{Expr: kooperProcess(catalog.ProcessRSS), Legend: "{{job}} {{instance}} resident"},
				{Expr: kooperProcess(catalog.GoHeap), Legend: "{{job}} {{instance}} heap"},
			},
		},
		{
			Title:       "Goroutines, by process",
			Description: "A count that keeps growing is a leak.",
			Unit:        units.Short,
			Targets: []Target{{
				Expr:   kooperProcess(catalog.GoGoroutines),
				Legend: "{{job}} {{instance}}",
			}},
		},
	}
}

// operatorControllerPanels are the controller panels an operator's own
// dashboard repeats, filtered by its controller variable.
func operatorControllerPanels() []Panel {
	h := handlingPanels()
	q := queuePanels()
	return []Panel{h[1], h[0], q[1], h[2], h[3], leaderPanel()}
}
