package child

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// ProfileEnv names the environment variable that, set to a directory, makes
// every child write a CPU profile of each measured phase there, named
// <impl>-<scenario>-<pid>-<phase>.cpu.pprof (phase sync or churn). The
// parent's environment reaches its children, so
//
//	KOOPER_BENCH_PROFILE=/tmp/prof go run ./cmd/cluster -impls kooper,kooper-v2
//
// profiles every run. Profiling costs every implementation the same few
// percent of CPU.
const ProfileEnv = "KOOPER_BENCH_PROFILE"

// profile is a running CPU profile, or nothing when ProfileEnv is unset.
type profile struct{ f *os.File }

// startProfile starts a CPU profile of phase when ProfileEnv is set.
func startProfile(a Args, phase string) (profile, error) {
	dir := os.Getenv(ProfileEnv)
	if dir == "" {
		return profile{}, nil
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%s-%d-%s.cpu.pprof", a.Impl, a.Scenario, os.Getpid(), phase))
	f, err := os.Create(name)
	if err != nil {
		return profile{}, fmt.Errorf("could not create the profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return profile{}, fmt.Errorf("could not start the CPU profile: %w", err)
	}
	return profile{f: f}, nil
}

// stop ends the profile and closes its file.
func (p profile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	if err := p.f.Close(); err != nil {
		return fmt.Errorf("could not write the profile: %w", err)
	}
	return nil
}
