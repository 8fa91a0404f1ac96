// Package leaderelection runs controllers in one replica at a time, the one
// holding a coordination.k8s.io Lease.
//
// Run several replicas of an operator for availability; a [Runner] in each
// competes for the Lease. The holder runs its controllers; the others stand
// by and take over when the holder stops or dies. [Runner.Leading] and
// [Runner.Standby] say which role this replica has now, e.g. for
// kooper/health's Readiness.
//
// With Config.Disabled a Runner runs its controllers at once and holds no
// Lease, for a single replica (a development run, a test): an operator
// builds and runs the same Runner either way, and needs no branch of its
// own.
//
// # What is guaranteed, and what it costs
//
//   - Losing the Lease (the API server was unreachable for longer than
//     RenewDeadline, or another holder took it) cancels the controllers'
//     context and makes Run return [ErrLeaseLost]: a replica that may no
//     longer be the leader stops handling. Exit the process and let it be
//     restarted as a standby.
//   - An old leader stops handling before a new one can start. A leader
//     notices it lost the Lease at the latest RetryPeriod + RenewDeadline
//     after its last renewal; a standby can take it over LeaseDuration after
//     that renewal. A controller then needs up to its ShutdownTimeout to
//     return, so New refuses a controller whose ShutdownTimeout is not below
//     LeaseDuration - RenewDeadline - RetryPeriod (3s with the defaults; the
//     controller's default is 2s). This relies on clocks advancing at the
//     same rate on both replicas, not on them agreeing.
//   - On a clean shutdown (the Run context is cancelled) the controllers are
//     drained first and the Lease is released after, so a standby takes over
//     at once without overlapping (disable with DisableReleaseOnCancel).
//   - A standby watches the Lease and tries to acquire it as soon as it sees
//     it released, or LeaseDuration after it saw the holder's last renewal,
//     instead of at its next retry (needs the RBAC verb watch on leases;
//     without it, the next retry takes it). The expiry is measured from
//     when this replica first saw the renewal, never earlier than
//     client-go's own rule would allow.
//   - A standby's Run returns nil when its context is cancelled.
//
// The runner is built on client-go's leaderelection package and its
// LeaseLock. Leader election is a liveness tool, not a mutex: handlers must
// stay idempotent and use resourceVersion preconditions where two writers
// would be harmful.
package leaderelection
