package faults

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Recorder writes one line when a handling begins and one when it ends,
// to a file of its own per replica process: what the invariants are
// checked on. A line is written with one write call, so a SIGKILL loses
// at most the end of a handling that was running.
type Recorder struct {
	mu sync.Mutex
	f  *os.File
	id string
}

// NewRecorder appends to path; id names the replica process.
func NewRecorder(path, id string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("could not open the record: %w", err)
	}
	return &Recorder{f: f, id: id}, nil
}

// Begin records that a handling of key at resourceVersion rv starts.
func (r *Recorder) Begin(key, rv string) { r.line("B", key, rv) }

// End records that it ended; ok is false if it failed (cancelled).
func (r *Recorder) End(key, rv string, ok bool) {
	if ok {
		r.line("E", key, rv)
	} else {
		r.line("X", key, rv)
	}
}

func (r *Recorder) line(kind, key, rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.f, "%s %s %s %s %d\n", kind, key, rv, r.id, time.Now().UnixNano())
}

// Close closes the file.
func (r *Recorder) Close() error { return r.f.Close() }

// Handling is one handling read back from the records.
type Handling struct {
	Key, RV, Replica string
	Begin, End       time.Time // End is zero if none was recorded
	OK               bool
}

// ReadRecords reads every *.rec file of dir.
func ReadRecords(dir string) ([]Handling, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.rec"))
	if err != nil {
		return nil, err
	}
	var all []Handling
	for _, f := range files {
		hs, err := readRecord(f)
		if err != nil {
			return nil, err
		}
		all = append(all, hs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Begin.Before(all[j].Begin) })
	return all, nil
}

func readRecord(path string) ([]Handling, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type open struct{ key, replica string }
	running := map[open][]int{} // handlings begun and not ended, by key and replica
	var out []Handling
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 5 {
			continue // the end of a line a SIGKILL cut
		}
		ns, err := strconv.ParseInt(fields[4], 10, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, ns)
		k := open{fields[1], fields[3]}
		switch fields[0] {
		case "B":
			out = append(out, Handling{Key: fields[1], RV: fields[2], Replica: fields[3], Begin: at})
			running[k] = append(running[k], len(out)-1)
		case "E", "X":
			idx := running[k]
			for i, j := range idx {
				if out[j].RV == fields[2] && out[j].End.IsZero() {
					out[j].End, out[j].OK = at, fields[0] == "E"
					running[k] = append(idx[:i], idx[i+1:]...)
					break
				}
			}
		}
	}
	return out, s.Err()
}
