// Package sharding runs one controller as several active replicas, each
// handling a disjoint share of the objects, on the API server's own
// sharding (ListOptions.ShardSelector, KEP-5866) where it has it.
//
// Leader election (package leaderelection) keeps every replica but one
// idle, so a controller's throughput and memory end where one process ends.
// A [Runner] in each replica instead holds a Lease of its own (membership:
// the Leases labelled [LabelGroup]=Config.Name), and the Runners agree on
// who owns which of Config.Slots slots of the UID hash space. Each replica's
// controllers handle the objects of its slots only
// (controller.Controller.RunSharded). When replicas come and go, slots move
// without a restart.
//
// # What is guaranteed
//
//   - One object is never handled by two replicas at once. A slot moves
//     from A to B only after A has stopped taking its keys, its running
//     handlings have returned, and A has removed the slot from its Lease;
//     B claims it in its own Lease, reads every Lease of the group from the
//     API server, and starts only if no other live replica claims it. The
//     protocol and its failure cases (partition, paused replica, clock
//     skew) are in docs/sharding.md.
//   - A replica that cannot renew its Lease for RenewDeadline stops taking
//     keys (checked before each key, so a paused process that wakes up
//     takes none) and cancels its running handlings; the others take its
//     slots LeaseDuration after they last saw it renew, as with leader
//     election. On a clean shutdown it gives up its slots and deletes its
//     Lease, and the others take them at once.
//   - Server-side mode (detected at start: the API server echoes the
//     selector in a list's metadata.shardInfo): each owned slot has its own
//     watch with a shard selector, so the API server sends, and the cache
//     holds, the share only. Client-side mode (the feature gate is off, as
//     on managed clusters today): every replica lists and caches every
//     object and handles its share; CPU in handlers is shared, memory is
//     not. The mode is logged, exported by the Recorder and returned by
//     [Runner.Mode].
//
// # Owners and children
//
// Shard the owner's controller. Child controllers, which route a changed
// child's owner into the owner's queue (owner.EnqueueOwner), run unsharded
// next to it (New's others): a sharded controller drops a routed key whose
// object is not in its slots, so the owner is handled where its slot is.
// Each replica then caches the metadata of every child.
//
// Handlers must stay idempotent, as under leader election: a handling cut
// off by a partition may still be running when its replica stops, until it
// notices its cancelled context.
package sharding
