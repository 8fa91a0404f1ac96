// Package proc reads what a benchmark child process costs: CPU time
// (getrusage), settled Go heap, and resident memory from /proc (Linux).
package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU returns the user plus system CPU time this process used so far
// (getrusage RUSAGE_SELF: every thread, the garbage collector included).
func CPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("could not read the process CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// SettledHeap runs the garbage collector twice (the second pass frees what
// finalizers of the first released) and returns the bytes of live heap
// objects (runtime.MemStats.HeapAlloc).
func SettledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Memory is the process's resident memory, in bytes.
type Memory struct {
	// RSS is the resident set size now (VmRSS).
	RSS uint64
	// Peak is the highest RSS so far (VmHWM).
	Peak uint64
}

// ReadMemory reads VmRSS and VmHWM from /proc/self/status.
func ReadMemory() (Memory, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Memory{}, fmt.Errorf("could not read the process memory: %w", err)
	}
	return parseStatus(b)
}

func parseStatus(b []byte) (Memory, error) {
	var m Memory
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		name, value, ok := bytes.Cut(s.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(name) {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(value), []byte(" kB"))), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("could not parse %s in /proc/self/status: %w", name, err)
		}
		*dst = kb * 1024
	}
	if m.RSS == 0 || m.Peak == 0 {
		return Memory{}, fmt.Errorf("no VmRSS or VmHWM in /proc/self/status")
	}
	return m, nil
}

// LoadAverage reports how busy the machine is (others may be compiling):
// the 1, 5 and 15 minute load averages, or "unknown".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// GC is what the garbage collector did so far, from runtime/metrics.
type GC struct {
	// Cycles counts the collections the runtime started on its own
	// (runtime.GC calls excluded).
	Cycles uint64
	// CPU is the runtime's estimate of the CPU time spent collecting
	// (/cpu/classes/gc/total: marking, assists, pauses). It is an estimate:
	// compare it with CPU only as a share.
	CPU time.Duration
}

// Sub returns what the collector did between before and g.
func (g GC) Sub(before GC) GC {
	return GC{Cycles: g.Cycles - before.Cycles, CPU: g.CPU - before.CPU}
}

// ReadGC reads the collector's counters.
func ReadGC() GC {
	samples := []metrics.Sample{
		{Name: "/gc/cycles/automatic:gc-cycles"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
	}
	metrics.Read(samples)
	var g GC
	if samples[0].Value.Kind() == metrics.KindUint64 {
		g.Cycles = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindFloat64 {
		g.CPU = time.Duration(samples[1].Value.Float64() * float64(time.Second))
	}
	return g
}
