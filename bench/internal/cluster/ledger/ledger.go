// Package ledger records every handling of every replica of a sharded
// controller, one append-only file per replica (scenario 6 of
// bench/cmd/cluster), and checks what the parent reads back: no two
// handlings of one key at once, every final version handled. It also
// computes each replica's share of the keys, when the replicas' slots were
// balanced, and handlings per second.
//
// A replica writes a line as a handling begins and another as it ends,
// each in one write(2) to a file opened with O_APPEND, so lines never
// interleave and a SIGKILL loses nothing the replica did: a handling it was
// in the middle of stays begun, not ended.
package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// Handling is one handling of one key by one replica: from its handler's
// first instruction to its last, in Unix nanoseconds.
type Handling struct {
	Replica string
	// Key is the pod's index (pods.Index).
	Key int
	// RV is the resourceVersion of the object handled.
	RV    string
	Start int64
	// End is 0 for a handling that began and never ended (its replica was
	// killed during it); see Tail.Open.
	End int64
}

// String describes h for error messages.
func (h Handling) String() string {
	end := "never ended"
	if h.End != 0 {
		end = fmt.Sprintf("%.3f ms", float64(h.End-h.Start)/1e6)
	}
	return fmt.Sprintf("%s: key %d at resourceVersion %s from %s (%s)",
		h.Replica, h.Key, h.RV, time.Unix(0, h.Start).UTC().Format("15:04:05.000000"), end)
}

// Writer appends a replica's handlings to its file. Safe for concurrent
// use by the replica's workers.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
	err error
}

// Create creates (or truncates) the file at path for a replica's
// handlings.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("could not create the handlings file: %w", err)
	}
	return &Writer{f: f, buf: make([]byte, 0, 128)}, nil
}

// Begin records that a handling of key at rv begins now and returns its
// start, for End.
func (w *Writer) Begin(key int, rv string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	start := time.Now().UnixNano()
	w.buf = append(w.buf[:0], 'b', ' ')
	w.buf = append(appendFields(w.buf, key, rv, start), '\n')
	w.write()
	return start
}

// End records that the handling of key at rv that began at start ends now.
func (w *Writer) End(key int, rv string, start int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := time.Now().UnixNano()
	w.buf = append(w.buf[:0], 'e', ' ')
	w.buf = append(appendFields(w.buf, key, rv, start), ' ')
	w.buf = append(strconv.AppendInt(w.buf, end, 10), '\n')
	w.write()
}

func appendFields(b []byte, key int, rv string, start int64) []byte {
	b = strconv.AppendInt(b, int64(key), 10)
	b = append(b, ' ')
	b = append(b, rv...)
	b = append(b, ' ')
	return strconv.AppendInt(b, start, 10)
}

// write writes buf in one call; the first error is kept for Close.
func (w *Writer) write() {
	if w.err != nil {
		return
	}
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("could not record a handling: %w", err)
	}
}

// Close closes the file and returns the first error of any write.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.err, w.f.Close())
}

// Tail reads a replica's handlings file as it grows.
type Tail struct {
	path    string
	replica string
	off     int64
	partial []byte
	open    map[begun]Handling
}

// begun identifies a handling between its two lines.
type begun struct {
	key   int
	start int64
}

// NewTail returns a Tail of the file at path, whose handlings are
// replica's.
func NewTail(path, replica string) *Tail {
	return &Tail{path: path, replica: replica, open: map[begun]Handling{}}
}

// Read returns the handlings that ended since the last Read (a file not
// created yet has none). A line still being written is kept for the next
// Read.
func (t *Tail) Read() ([]Handling, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("could not open the handlings of %s: %w", t.replica, err)
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("could not read the handlings of %s: %w", t.replica, err)
	}
	data, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("could not read the handlings of %s: %w", t.replica, err)
	}
	t.off += int64(len(data))
	data = append(t.partial, data...)
	last := bytes.LastIndexByte(data, '\n')
	t.partial = append([]byte(nil), data[last+1:]...)
	var ended []Handling
	for line := range bytes.SplitSeq(data[:last+1], []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		h, isEnd, err := parse(line)
		if err != nil {
			return ended, fmt.Errorf("%s: %w", t.replica, err)
		}
		h.Replica = t.replica
		id := begun{h.Key, h.Start}
		if !isEnd {
			t.open[id] = h
			continue
		}
		delete(t.open, id)
		ended = append(ended, h)
	}
	return ended, nil
}

// Open returns the handlings that began and have not ended (so far).
func (t *Tail) Open() []Handling {
	out := make([]Handling, 0, len(t.open))
	for _, h := range t.open {
		out = append(out, h)
	}
	return out
}

// parse parses "b key rv start" or "e key rv start end".
func parse(line []byte) (h Handling, isEnd bool, err error) {
	f := bytes.Fields(line)
	bad := fmt.Errorf("bad handling line %q", line)
	switch {
	case len(f) == 4 && string(f[0]) == "b":
	case len(f) == 5 && string(f[0]) == "e":
		isEnd = true
	default:
		return h, false, bad
	}
	key, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseInt(string(f[3]), 10, 64)
	if err1 != nil || err2 != nil {
		return h, false, bad
	}
	h = Handling{Key: key, RV: string(f[2]), Start: start}
	if isEnd {
		if h.End, err = strconv.ParseInt(string(f[4]), 10, 64); err != nil || h.End < h.Start {
			return h, false, bad
		}
	}
	return h, isEnd, nil
}
