// Package leaderelection runs controllers in one replica at a time, the one
// holding a coordination.k8s.io Lease.
//
// Run several replicas of an operator for availability; a [Runner] in each
// competes for the Lease. The holder runs its controllers; the others stand
// by and take over when the holder stops or dies. [Runner.Leading] and
// [Runner.Standby] say which role this replica has now, and
// [Runner.Ready] answers kooper/health's /readyz with it.
//
// With Config.Disabled a Runner runs its controllers at once and holds no
// Lease, for a single replica (a development run, a test): an operator
// builds and runs the same Runner either way, and needs no branch of its
// own.
//
// # What is guaranteed, and what it costs
//
//   - Losing the Lease (no renewal succeeded for RenewDeadline, because
//     the API server was unreachable or slow, or another holder took it)
//     cancels the controllers' context and makes Run return [ErrLeaseLost]:
//     a replica that may no longer be the leader stops handling. Exit the
//     process and let it be restarted as a standby.
//   - An old leader stops handling before a new one can start. A leader
//     stops leading RenewDeadline after the start of its last successful
//     renewal, even while a request hangs; a standby can take the Lease
//     over no sooner than LeaseDuration after it saw that renewal, on its
//     own clock. A controller then needs up to its ShutdownTimeout to
//     return, so New refuses a controller whose ShutdownTimeout is not
//     below LeaseDuration - RenewDeadline - RetryPeriod (3s with the
//     defaults; the controller's default is 2s; the RetryPeriod is a
//     margin, kept from the previous version). This relies on clocks
//     advancing at the same rate on both replicas, not on them agreeing.
//   - On a clean shutdown (the Run context is cancelled) the controllers are
//     drained first, while the Lease is still renewed, and it is released
//     after, so a standby takes over at once without overlapping.
//   - A standby watches the Lease and tries to acquire it as soon as it sees
//     it released, or LeaseDuration after it first saw its current version,
//     instead of at its next retry (needs the RBAC verb watch on leases;
//     without it, the next retry takes it).
//   - A standby's Run returns nil when its context is cancelled.
//
// The runner speaks the Lease protocol itself (acquire, renew, release,
// observe: lease.go), with the API server's optimistic concurrency
// deciding every race, and writes the Lease as client-go's leader elector
// does, so replicas of a kooper version built on that elector take turns
// with it during a rolling upgrade. Leader election is a liveness tool,
// not a mutex: handlers must stay idempotent and use resourceVersion
// preconditions where two writers would be harmful.
package leaderelection
