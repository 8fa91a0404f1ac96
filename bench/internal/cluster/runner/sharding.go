package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/ledger"
	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// Scenario 6's three runs, Kooper only: no peer shards one controller's
// objects over several active replicas.
const (
	// ShardingGateOn is the initial sync of the seeded pods by one
	// unsharded replica, then by ShardReplicas sharded ones, on the
	// control plane with the ShardedListAndWatch feature gate on: the API
	// server sends each replica its share only.
	ShardingGateOn = "sharding-gate-on"
	// ShardingGateOff is the same on a second control plane started with
	// the gate off, seeded with Options.ShardingOffPods pods: every replica
	// retrieves and caches every pod and handles its share.
	ShardingGateOff = "sharding-gate-off"
	// ShardingMoves is membership changes with the gate on while a writer
	// updates pods: 3 sharded replicas, 4, 5, then 4 and 3 (clean stops),
	// one killed (SIGKILL), then an API server restart.
	ShardingMoves = "sharding-moves"
)

// ShardReplicas is how many sharded replicas the gate-on and gate-off
// runs start.
const ShardReplicas = 3

// FairShare is the tolerance (relative) of the goal that each of the
// ShardReplicas replicas handles and caches 1/3 of the pods.
const FairShare = 0.10

// ShardingSettings are scenario 6's settings (Options).
type ShardingSettings struct {
	// Slots is the sharding Runners' slot count (the library's default).
	Slots      int           `json:"slots"`
	OffPods    int           `json:"offPods"`
	Updates    int           `json:"updates"`
	Handle     time.Duration `json:"handle"`
	Hold       time.Duration `json:"hold"`
	WriteEvery time.Duration `json:"writeEvery"`
}

// ShardSplit is a gate-on or gate-off run: one unsharded replica, then
// ShardReplicas sharded ones, each started by a go at the same instant.
type ShardSplit struct {
	Pods int `json:"pods"`
	// Mode is how the sharded replicas retrieved their share
	// (sharding.Mode).
	Mode     string         `json:"mode"`
	Baseline ShardReplica   `json:"baseline"`
	Replicas []ShardReplica `json:"replicas"`
	// BaselineAllHandled and AllHandled are from the go to every pod
	// handled: by the unsharded replica, and by one sharded replica or
	// another.
	BaselineAllHandled time.Duration `json:"baselineAllHandled"`
	AllHandled         time.Duration `json:"allHandled"`
	// Balanced is from the sharded replicas' go to their slots balanced
	// for good (until they were measured).
	Balanced time.Duration `json:"balanced"`
	// Updates is how many distinct pods were updated once each after the
	// measurement, for ShardReplica.UpdateShare; Misrouted how many of
	// them a replica handled at their new version whose slot it did not
	// own when measured.
	Updates   int `json:"updates"`
	Misrouted int `json:"misrouted"`
	// Handlings counts every handling of the run, the baseline's too;
	// Overlaps those that began before another of the same key ended
	// (the run fails unless 0).
	Handlings int `json:"handlings"`
	Overlaps  int `json:"overlaps"`
}

// ShardReplica is one replica's figures in a gate-on or gate-off run.
type ShardReplica struct {
	Name string `json:"name"`
	// Slots is how many slots it owned when measured; SlotPods how many
	// seeded pods hash into them (the whole namespace for the baseline).
	Slots    int `json:"slots"`
	SlotPods int `json:"slotPods"`
	// Cached is its cache's size (Controller.List), Delivered the objects
	// its Retriever delivered (list items and watch events), when
	// measured.
	Cached    int   `json:"cached"`
	Delivered int64 `json:"delivered"`
	// Heap is the settled heap then minus the one before its start; RSS
	// is VmRSS then, in bytes.
	Heap int64  `json:"heap"`
	RSS  uint64 `json:"rss"`
	// Keys is how many distinct pods it handled from the go until it was
	// measured (the slots move while the replicas join, so the sum can
	// exceed the pods).
	Keys int `json:"keys"`
	// UpdateShare is the share of the updated pods it handled at their new
	// version.
	UpdateShare float64  `json:"updateShare"`
	Requests    []string `json:"requests"`
}

// plane is a control plane the sharding runs use, with Namespace seeded.
type plane struct {
	cluster    *envtest.Cluster
	client     kubernetes.Interface
	kubeconfig string
	pods       int
}

// sharding runs one of scenario 6's runs.
func (r *runner) sharding(ctx context.Context, scenario string, round int) Record {
	run := Record{Impl: impls.NameKooper, Scenario: scenario, Round: round}
	select {
	case <-time.After(r.o.Settle):
	case <-ctx.Done():
	}
	var err error
	switch scenario {
	case ShardingGateOn:
		err = r.split(ctx, r.main, round, &run)
	case ShardingGateOff:
		var p *plane
		if p, err = r.offPlane(ctx); err == nil {
			err = r.split(ctx, p, round, &run)
		}
	case ShardingMoves:
		err = r.moves(ctx, r.main, &run)
	}
	if err != nil {
		run.Err = err.Error()
	}
	return run
}

// offPlane returns the control plane with the ShardedListAndWatch gate
// off, started and seeded with ShardingOffPods pods the first time (Run
// stops it).
func (r *runner) offPlane(ctx context.Context) (*plane, error) {
	if r.off != nil {
		return r.off, nil
	}
	fmt.Fprintf(r.o.Progress, "sharding: starting a second control plane with the ShardedListAndWatch feature gate off\n")
	cluster, err := envtest.Start(ctx, envtest.Options{
		BinDir: r.main.cluster.BinDir(), Progress: r.o.Progress,
		FeatureGates: map[string]bool{"ShardedListAndWatch": false},
	})
	if err != nil {
		return nil, fmt.Errorf("could not start the control plane with the gate off: %w", err)
	}
	off := &plane{cluster: cluster, kubeconfig: cluster.KubeconfigPath(), pods: r.o.ShardingOffPods}
	began := time.Now()
	if off.client, err = pods.WriteClient(cluster.Config()); err == nil {
		err = pods.Seed(ctx, off.client, Namespace, off.pods, r.o.Progress)
	}
	if err != nil {
		return nil, errors.Join(err, cluster.Stop())
	}
	fmt.Fprintf(r.o.Progress, "sharding: seeded %d pods with the gate off in %s\n", off.pods, time.Since(began).Round(time.Millisecond))
	r.off = off
	return off, nil
}

// shardArgs are the arguments of p's sharding children in a new group.
func (r *runner) shardArgs(p *plane) child.Args {
	r.runs++
	election := r.o.Lease
	election.Namespace, election.Name = Namespace, fmt.Sprintf("%s-%04d", impls.ShardName, r.runs%10000)
	return child.Args{
		Impl:        impls.NameKooper,
		Scenario:    child.Sharding,
		Kubeconfig:  p.kubeconfig,
		Pods:        p.pods,
		Token:       fmt.Sprintf("run-%04d", r.runs%10000),
		Timeout:     r.o.Timeout,
		StopTimeout: r.o.StopTimeout,
		Election:    election,
	}
}

// slotsOf returns each pod's slot, by index, from its UID.
func slotsOf(uids []types.UID) []int {
	out := make([]int, len(uids))
	for i, uid := range uids {
		out[i] = sharding.SlotOf(uid, sharding.DefaultSlots)
	}
	return out
}

// podsIn counts the pods whose slot is one of slots.
func podsIn(slotOf []int, slots []int) int {
	in := map[int]bool{}
	for _, s := range slots {
		in[s] = true
	}
	n := 0
	for _, s := range slotOf {
		if in[s] {
			n++
		}
	}
	return n
}

// split runs the baseline, then the sharded replicas, on p.
func (r *runner) split(ctx context.Context, p *plane, round int, run *Record) error {
	s := &ShardSplit{Pods: p.pods}
	run.Split = s
	uids, _, err := pods.Versions(ctx, p.cluster.Config(), Namespace, p.pods)
	if err != nil {
		return err
	}
	slotOf := slotsOf(uids)
	dir, err := os.MkdirTemp("", "kooper-bench-sharding-")
	if err != nil {
		return fmt.Errorf("could not create the handlings directory: %w", err)
	}
	defer os.RemoveAll(dir)
	args := r.shardArgs(p)

	base, err := r.splitOnce(ctx, p, args, dir, []string{""}, slotOf, 0, s)
	run.TotalCPU += base.cpu
	if err != nil {
		return fmt.Errorf("unsharded: %w", err)
	}
	s.Baseline, s.BaselineAllHandled = base.replicas[0], base.allHandled
	select {
	case <-time.After(r.o.Settle):
	case <-ctx.Done():
	}
	sharded, err := r.splitOnce(ctx, p, args, dir, []string{"a", "b", "c"}[:ShardReplicas], slotOf, round, s)
	run.TotalCPU += sharded.cpu
	if err != nil {
		return fmt.Errorf("sharded: %w", err)
	}
	s.Replicas, s.AllHandled, s.Balanced, s.Mode = sharded.replicas, sharded.allHandled, sharded.balanced, sharded.mode
	want := sharding.ModeServerSide
	if p != r.main {
		want = sharding.ModeClientSide
	}
	if s.Mode != string(want) {
		return fmt.Errorf("the sharded replicas detected %s sharding, want %s on this control plane", s.Mode, want)
	}
	return nil
}

// splitResult is what splitOnce measured.
type splitResult struct {
	replicas   []ShardReplica
	allHandled time.Duration
	balanced   time.Duration
	mode       string
	cpu        time.Duration
}

// splitOnce starts replicas (one unsharded replica for the name ""),
// sends them the go at once, waits until every pod is handled, the slots
// are balanced and each cache holds its share, measures each, then (if
// sharded) updates s.Updates pods and measures each replica's share of
// them, stops them and checks every handling.
func (r *runner) splitOnce(ctx context.Context, p *plane, args child.Args, dir string, replicas []string, slotOf []int, round int, s *ShardSplit) (res splitResult, err error) {
	f := newFleet(p.pods)
	defer func() {
		for _, rep := range f.reps {
			cpu, rerr := rep.end(err)
			res.cpu += cpu
			if err == nil {
				err = rerr
			}
		}
	}()
	for _, name := range replicas {
		rep, err := r.startReplica(ctx, args, name, dir)
		if err != nil {
			return res, err
		}
		f.reps = append(f.reps, rep)
	}
	sharded := replicas[0] != ""
	goAt, err := goAll(f.reps...)
	if err != nil {
		return res, err
	}
	complete := func() bool {
		if !f.cover.Complete() || (sharded && !balancedNow(f.reps, sharding.DefaultSlots)) {
			return false
		}
		for _, rep := range f.reps {
			st := rep.state()
			want := p.pods
			if st.Mode == string(sharding.ModeServerSide) {
				want = podsIn(slotOf, st.Slots)
			}
			if st.Mode == "" || st.Cached != want {
				return false
			}
		}
		return true
	}
	progress := func() string {
		out := fmt.Sprintf("%d/%d pods handled", f.cover.Covered(), p.pods)
		for _, rep := range f.reps {
			st := rep.state()
			out += fmt.Sprintf("; %s: %s, %d slots, %d cached", rep.name, st.Mode, len(st.Slots), st.Cached)
		}
		return out
	}
	if err := f.waitUntil(ctx, r.o.Timeout, "waiting for every pod handled and every cache complete", complete, progress); err != nil {
		return res, err
	}
	res.allHandled = time.Duration(f.cover.Last() - goAt.UnixNano())

	measuredAt := time.Now()
	synced := len(f.hs)
	owner := map[int]string{} // slot → replica, when measured
	for _, rep := range f.reps {
		m, err := rep.measure(r.o.Timeout)
		if err != nil {
			return res, err
		}
		sr := ShardReplica{Name: rep.name, Slots: len(m.Slots), SlotPods: p.pods, Cached: m.Cached, Delivered: m.Delivered,
			Heap: m.Heap, RSS: m.RSS, Requests: m.Requests}
		if m.Mode == string(sharding.ModeServerSide) || m.Mode == string(sharding.ModeClientSide) {
			sr.SlotPods = podsIn(slotOf, m.Slots)
		}
		res.replicas = append(res.replicas, sr)
		res.mode = m.Mode
		for _, slot := range m.Slots {
			owner[slot] = rep.name
		}
	}
	keys := ledger.Distinct(f.hs[:synced])
	for i := range res.replicas {
		res.replicas[i].Keys = keys[res.replicas[i].Name]
	}
	if sharded {
		var reports []ledger.SlotReport
		for _, rep := range f.reps {
			reports = append(reports, rep.slotReports()...)
		}
		at, ok := ledger.SettledAt(reports, names(f.reps), sharding.DefaultSlots, goAt.UnixNano(), measuredAt.UnixNano())
		if !ok {
			return res, errors.New("the slots were not balanced when measured")
		}
		res.balanced = time.Duration(at - goAt.UnixNano())
		updated, err := r.updateShares(ctx, p, args.Token, round, f, res.replicas, s)
		if err != nil {
			return res, err
		}
		if s.Misrouted, err = misrouted(f.hs, updated, owner, slotOf); err != nil {
			return res, err
		}
	}

	if err := stopAll(f.reps, r.o.StopTimeout); err != nil {
		return res, err
	}
	if err := f.poll(); err != nil {
		return res, err
	}
	if _, err := f.unfinished(); err != nil {
		return res, err
	}
	s.Handlings += len(f.hs)
	overlaps := ledger.Overlaps(f.hs)
	s.Overlaps += len(overlaps)
	if len(overlaps) > 0 {
		return res, fmt.Errorf("%d handlings began before another of the same key ended, e.g. %s", len(overlaps), overlaps[0])
	}
	return res, nil
}

// updateShares updates Options.ShardingUpdates distinct pods once each
// and sets each replica's share of them, once every one was handled at its
// new version; it returns their new versions (key → resourceVersion).
func (r *runner) updateShares(ctx context.Context, p *plane, token string, round int, f *fleet, replicas []ShardReplica, s *ShardSplit) (map[int]string, error) {
	n := min(r.o.ShardingUpdates, p.pods)
	s.Updates = n
	keys := rand.New(rand.NewPCG(uint64(round), 6)).Perm(p.pods)[:n]
	var mu sync.Mutex
	want := map[int]string{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.o.ChurnWriters)
	for _, key := range keys {
		g.Go(func() error {
			rv, err := pods.Touch(gctx, p.client, Namespace, key, token)
			mu.Lock()
			want[key] = rv
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var by map[string]int
	missing := n
	handled := func() bool { by, missing = ledger.Shares(f.hs, want); return missing == 0 }
	if err := f.waitUntil(ctx, r.o.Timeout, "waiting for the updated pods handled", handled,
		func() string { return fmt.Sprintf("%d/%d handled at their new version", n-missing, n) }); err != nil {
		return nil, err
	}
	for i := range replicas {
		replicas[i].UpdateShare = float64(by[replicas[i].Name]) / float64(n)
	}
	return want, nil
}

// misrouted counts the keys of want (key → resourceVersion) handled at
// that version by a replica other than their slot's owner.
func misrouted(hs []ledger.Handling, want map[int]string, owner map[int]string, slotOf []int) (int, error) {
	if len(owner) != sharding.DefaultSlots {
		return 0, fmt.Errorf("%d slots owned when measured, want %d", len(owner), sharding.DefaultSlots)
	}
	wrong := map[int]bool{}
	for _, h := range hs {
		if rv, ok := want[h.Key]; ok && rv == h.RV && owner[slotOf[h.Key]] != h.Replica {
			wrong[h.Key] = true
		}
	}
	return len(wrong), nil
}

// stopAll asks every replica to stop at once and waits for each.
func stopAll(reps []*replica, d time.Duration) error {
	errs := make([]error, len(reps))
	var wg sync.WaitGroup
	for i, rep := range reps {
		wg.Go(func() { _, errs[i] = rep.stop(d) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
