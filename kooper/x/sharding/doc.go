// Package sharding runs one controller as several active replicas, each
// handling a disjoint share of the objects, on the API server's own
// sharding (ListOptions.ShardSelector, KEP-5866) where it has it.
//
// The package is experimental: it builds on an alpha API of Kubernetes,
// and its API may change in any release. It uses package controller's
// public API only.
//
// Leader election (package leaderelection) keeps every replica but one
// idle, so a controller's throughput and memory end where one process ends.
// A [Runner] in each replica instead holds a Lease of its own (membership:
// the Leases labelled [LabelGroup]=Config.Name), and the Runners agree on
// who owns which of Config.Slots slots of the UID hash space ([SlotOf]).
// Each replica's controllers handle the objects of its slots only. When
// replicas come and go, slots move without a restart.
//
// # Wiring
//
// A sharded controller is a plain controller.Controller whose Handler goes
// through the Runner's slot gate ([Runner.Handler], a Middleware) and whose
// Retriever is decorated by the Runner ([Runner.Retriever]); [Runner.Run]
// runs it with its plain Run:
//
//	shards, err := sharding.New(sharding.Config{Name: "pods", Namespace: ns, Client: client.CoordinationV1()})
//	c, err := controller.New(controller.Config{
//		Name:      "pods",
//		Handler:   shards.Handler(handler),
//		Retriever: shards.Retriever(pods),
//	})
//	err = shards.Run(ctx, c)
//
// The gate drops the objects of slots this replica does not hold, before
// the handler; the decorated Retriever, server-side, retrieves only the
// objects of the slots it holds. Run refuses controllers that are not as
// many as the Handlers and the Retrievers the Runner made.
//
// # What is guaranteed
//
//   - One object is never handled by two replicas at once. A slot moves
//     from A to B only after A has stopped taking its keys, its running
//     handlings have returned, and A has removed the slot from its Lease;
//     B claims it in its own Lease, reads every Lease of the group from the
//     API server, and starts only if no other live Lease claims it,
//     whatever that Lease's slot count. The protocol and its failure cases
//     (partition, paused replica, clock skew) are in docs/sharding.md;
//     Leases not written by a replica are below.
//   - A replica that cannot renew its Lease for RenewDeadline stops taking
//     keys (checked before each key, so a paused process that wakes up
//     takes none; each is queued again a second later) and cancels its
//     running handlings, as controller.Controller.SetValidUntil does under
//     leader election (one implementation); the others take its slots
//     LeaseDuration after they last saw it renew, as with leader election.
//     On a clean shutdown it gives up its slots and deletes its Lease, and
//     the others take them at once.
//   - Server-side mode (detected at start: the API server echoes the
//     selector in a list's metadata.shardInfo): the controller's list and
//     watch carry a shard selector of the slots it holds, so the API
//     server sends, and the cache holds, the share only; when its slots
//     change, the open watch moves to the new selector without a new list
//     (the API server streams the new share into it, and the objects of
//     the released slots are deleted from the cache; see
//     [Runner.Retriever]). Client-side mode (the feature gate is off, as
//     on managed clusters today): every replica lists and caches every
//     object, queues every change, and handles its share; CPU in handlers
//     is shared, memory is not. The mode is logged, exported by the
//     Recorder and returned by [Runner.Mode].
//
// # Leases not written by a replica
//
// Anyone who can write Leases in Config.Namespace can add one to the
// group, and a replica cannot tell it from a replica's. Safety rests on
// claims only: a replica handles a slot only after it read, after its own
// claim, that no other live Lease claims it. The rules below never relax
// that: they ignore what no replica writes, and bound what another Lease
// can make a replica give up to what a replica joining the group would
// get:
//
//   - A Lease whose annotations no replica writes (a slot count that is no
//     power of two up to 256, claims that do not parse) is ignored: no
//     replica can be handling anything under it.
//   - A Lease not renewed for its lease duration, or for ten of this
//     replica's if that is shorter, is gone (and deleted), as before: one
//     written once with an hour's duration holds nothing back for longer.
//   - A live Lease with another slot count is no member: its slot count
//     changes nothing here. Its claims are respected: counts are powers of
//     two, so each of its slots lies within one of ours or spans whole
//     ones, and no slot that overlaps one it claims is taken. Ignoring
//     them would not be safe: during a rolling update that changes Slots,
//     a replica of the other version may be handling those objects. It
//     does the same with ours, so of two replicas with different counts
//     at most one handles an object, by the same claim-then-read rule.
//   - A replica gives up a slot it holds only when a member should own it
//     and no other Lease claims it: a Lease claiming that slot keeps it
//     where it is (a replica claims a held slot only until its next
//     check; if it kept doing so, whoever should own the slot could not
//     take it), and is no member.
//   - A member that leaves the slots it should own unclaimed for
//     RenewDeadline is no member until its claims change, and the others
//     take them back: a Lease that looks like a replica that just joined
//     costs its share for that long at most.
//
// Each finding is logged at warning level, once per Lease (a claim on a
// held slot once it lasted RenewDeadline). A replica that has held no slot
// for RenewDeadline while it should own some is not Ready, and Ready's
// error names the Leases claiming its slots. What no rule can undo: a live
// Lease that claims slots nobody holds (or the share it got as a joining
// replica) looks like a replica handling them, so they wait for it, at
// most ten lease durations if nobody renews it. Let only the operator
// write Leases in that namespace.
//
// A rolling update that changes Slots is therefore safe: the new replicas
// take the slots the old ones give up as they stop. A new replica that
// holds none is not Ready, so a rollout that waits for it before stopping
// an old one (maxUnavailable 0, the default below four replicas) waits for
// ever: change Slots with the Recreate strategy.
//
// # Owners and children
//
// Shard the owner's controller; its sources (controller.Owns) are not
// sharded (give them a plain Retriever): a child's change queues its owner
// in every replica, and the gate lets only the replica that holds the
// owner's slot handle it. Each replica then caches the metadata of every
// child.
//
// Handlers must stay idempotent, as under leader election: a handling cut
// off by a partition may still be running when its replica stops, until it
// notices its cancelled context.
package sharding
