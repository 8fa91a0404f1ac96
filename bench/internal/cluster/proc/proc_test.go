package proc

import (
	"runtime"
	"testing"
)

func TestParseStatusReadsRSSAndPeakInBytes(t *testing.T) {
	got, err := parseStatus([]byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Memory{RSS: 1 << 20, Peak: 2 << 20}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseStatus([]byte("Name:\tx\n")); err == nil {
		t.Error("got no error for a status without VmRSS, want one")
	}
}

func TestThisProcessHasCPUAndMemory(t *testing.T) {
	cpu, err := CPU()
	if err != nil || cpu <= 0 {
		t.Errorf("got CPU %v, %v, want > 0", cpu, err)
	}
	m, err := ReadMemory()
	if err != nil || m.RSS == 0 || m.Peak < m.RSS {
		t.Errorf("got memory %+v, %v, want RSS > 0 and peak >= RSS", m, err)
	}
	if h := SettledHeap(); h == 0 {
		t.Error("got a settled heap of 0 bytes")
	}
}

func TestReadGCCountsCollectionsAndTheirCPU(t *testing.T) {
	before := ReadGC()
	var keep [][]byte
	for range 64 { // 64 MiB of garbage: the runtime collects on its own
		keep = append(keep[:0], make([]byte, 1<<20))
	}
	_ = keep
	runtime.GC() // publishes the CPU estimate of the cycles so far
	got := ReadGC().Sub(before)
	if got.Cycles == 0 || got.CPU <= 0 {
		t.Errorf("got %+v after 64 MiB of garbage, want at least one automatic cycle and some GC CPU", got)
	}
}
