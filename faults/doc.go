// Package faults is a harness that runs a kooper controller's replicas,
// under leader election, through failures and checks what the library
// promises: one key is never handled by two replicas at once, and every
// object's final version is handled once the failures stop.
//
// Each replica is a process (a copy of the test binary, see
// RunReplicaIfAsked), restarted a second after it exits as a kubelet
// would, that reaches the API server through a fault-injecting proxy of
// its own (Proxy), running in the test process. The replicas record every handling they
// begin and end in files of their own, which survive a SIGKILL; the test
// reads them. Writers change the ConfigMaps the replicas handle, straight
// on the API server. The faults (Faults) are the proxy's (connections
// reset in the middle of watches, 0.5-3 s of latency, a blackhole), the
// control plane's (an API server or etcd restart, an etcd compaction that
// makes watches resume from a version that is gone, a burst of requests
// that gets 429s) and the replicas' (SIGKILL of the leader, SIGSTOP of it
// for longer than its Lease, then SIGCONT).
//
// A replica can also be any program (Harness.Command): package
// faults/operators runs the sample operators' own binaries, as their own
// ServiceAccounts, and checks what each operator promises under the same
// faults.
//
// A controller run in the test process through a proxy that resets,
// delays and blackholes its connections must also leave, once Run
// returns, no goroutine of the library or of client-go's cache, and no
// more than the one connection a client pools (TestNoLeakAfterFaults).
//
// It is its own module, so that what a fault harness needs stays out of
// the library's go.mod. It first ran Toxiproxy in process, which
// deadlocked in the soak (see Proxy). `make test` runs each fault once and a short mixed run;
// `make soak SEED=... DURATION=...` runs a long one.
package faults
