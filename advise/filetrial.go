package advise

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
)

// DefaultFileLimit is the most bytes of one file a pass reads
// (Options.FileLimit).
const DefaultFileLimit = 1 << 30

// fileTrial reads one file through the engine engines. A file larger than
// the limit is not read whole: each of a pass's W workers reads the start
// of its own region (an engine gives worker k of W the blocks from
// nblocks·k/W on), limit/W bytes of it, so that the bytes read and warmed
// are the same few ranges for every candidate with W workers. A worker done
// with its window goes on reading (uncounted) until the others are done
// with theirs, as it would go on with its region in a whole read.
type fileTrial struct {
	path  string
	size  int64
	limit int64 // bytes a pass reads at most
	bs    int64
	procs int
	probe *features.Report
	extra []Candidate // measured too (Auto's pick, when it is not a candidate)
}

func newFileTrial(inv *Inventory, procs int, limit int64, probe *features.Report) *fileTrial {
	t := &fileTrial{path: inv.Paths[0], size: inv.Bytes, bs: engine.DefaultBlockSize, procs: procs, probe: probe}
	t.setLimit(limit)
	return t
}

func (t *fileTrial) setLimit(limit int64) {
	if limit <= 0 || limit >= t.size {
		t.limit = t.size
		return
	}
	// Whole blocks, at least one per worker.
	t.limit = max(limit/t.bs*t.bs, t.bs*int64(t.procs))
	t.limit = min(t.limit, t.size)
}

func (t *fileTrial) kind() Kind { return OneFile }

// whole reports whether a pass reads the whole file.
func (t *fileTrial) whole() bool { return t.limit >= t.size }

// candidates: read (the baseline), pread with one worker and with
// GOMAXPROCS, mmap and io_uring.
func (t *fileTrial) candidates() []Candidate {
	c := []Candidate{{"read", 1}, {"pread", 1}}
	if t.procs > 1 {
		c = append(c, Candidate{"pread", t.procs})
	}
	c = append(c, Candidate{"mmap", 1}, Candidate{"io_uring", 1})
	return withExtra(c, t.extra)
}

// withExtra appends the extra candidates that are not in c already.
func withExtra(c, extra []Candidate) []Candidate {
	for _, x := range extra {
		if !slices.Contains(c, x) {
			c = append(c, x)
		}
	}
	return c
}

// regionStart is where an engine's worker k of w starts reading, in the
// sequential pattern: block nblocks·k/w (engine/plan.go).
func (t *fileTrial) regionStart(k, w int) int64 {
	nblocks := (t.size + t.bs - 1) / t.bs
	h, l := bits.Mul64(uint64(nblocks), uint64(k))
	q, _ := bits.Div64(h, l, uint64(w))
	return int64(q) * t.bs
}

// windows returns the range each of w workers reads in a pass.
func (t *fileTrial) windows(w int) []span {
	out := make([]span, w)
	per := (t.limit/int64(w) + t.bs - 1) / t.bs * t.bs
	for k := range w {
		lo, hi := t.regionStart(k, w), min(t.regionStart(k+1, w), t.size)
		out[k] = span{lo, min(per, hi-lo)}
	}
	return out
}

// allWindows is every candidate's windows (they overlap).
func (t *fileTrial) allWindows() []span {
	if t.whole() {
		return []span{{0, t.size}}
	}
	var all []span
	seen := map[int]bool{}
	for _, c := range t.candidates() {
		if !seen[c.Workers] {
			seen[c.Workers] = true
			all = append(all, t.windows(c.Workers)...)
		}
	}
	return all
}

// spans is the union of every candidate's windows.
func (t *fileTrial) spans() []span { return mergeSpans(t.allWindows()) }

func mergeSpans(s []span) []span {
	// Few spans: insertion sort by offset, then merge overlaps.
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].off < s[j-1].off; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	var out []span
	for _, x := range s {
		if n := len(out); n > 0 && x.off <= out[n-1].off+out[n-1].n {
			end := max(out[n-1].off+out[n-1].n, x.off+x.n)
			out[n-1].n = end - out[n-1].off
			continue
		}
		out = append(out, x)
	}
	return out
}

func (t *fileTrial) open(c Candidate) (passer, error) {
	if c.Engine == "io_uring" && !t.probe.IOURing.Available {
		return nil, &engine.NotSupportedError{What: "io_uring", Reason: t.probe.IOURing.Reason}
	}
	e, err := engine.Lookup(c.Engine)
	if err != nil {
		return nil, err
	}
	pr, err := e.Prepare(engine.Job{Path: t.path, Pattern: engine.Sequential, BlockSize: int(t.bs), Workers: c.Workers})
	if err != nil {
		return nil, err
	}
	p := &filePasser{t: t, pr: pr, accs: make([]acc, c.Workers), ends: make([]int64, c.Workers), lens: make([]int64, c.Workers)}
	for k, s := range t.windows(c.Workers) {
		p.ends[k], p.lens[k] = s.off+s.n, s.n
	}
	return p, nil
}

// warm reads the ranges a pass reads once, in 64 steps that advance every
// window alike from its start; if the time runs out first, the trial's
// limit is cut to what was warmed (the passes then read less, from the
// same starts).
func (t *fileTrial) warm(ctx context.Context, until time.Time) (string, error) {
	fd, _, err := openRO(t.path)
	if err != nil {
		return "", err
	}
	defer sys.Close(fd)
	buf, err := sys.MmapAnon(1 << 20)
	if err != nil {
		return "", err
	}
	defer sys.Munmap(buf)
	spans := t.allWindows()
	const steps = 64
	for step := range steps {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if time.Now().After(until) {
			if step == 0 {
				return "", nil // nothing warmed: the residency check says so
			}
			old := t.limit
			t.setLimit(t.limit * int64(step) / steps)
			return fmt.Sprintf("a pass reads %s, not %s: only that much could be read once in the time the budget gave warming",
				humanSize(t.limit), humanSize(old)), nil
		}
		for _, s := range spans {
			lo := s.off + s.n*int64(step)/steps
			hi := s.off + s.n*int64(step+1)/steps
			for off := lo; off < hi; {
				n, err := sys.Pread(fd, buf[:min(int64(len(buf)), hi-off)], off)
				if err != nil {
					return "", &fs.PathError{Op: "read", Path: t.path, Err: err}
				}
				if n == 0 {
					break // the file shrank
				}
				off += int64(n)
			}
		}
	}
	return "", nil
}

// drop drops the whole file's cached pages.
func (t *fileTrial) drop(bool) error { return dropSpans(t.path, nil) }

func (t *fileTrial) residency() (float64, bool) {
	r, err := fileResidency(t.path, t.spans())
	return r, err == nil
}

// acc is one worker's counts, on its own cache line.
type acc struct {
	sum, bytes, blocks uint64
	_                  [40]byte
}

type filePasser struct {
	t    *fileTrial
	pr   engine.Prepared
	accs []acc
	ends []int64 // worker k's window ends at ends[k]
	lens []int64 // and is lens[k] bytes long
}

func (p *filePasser) close() { p.pr.Close() }

// pass runs the engine until every worker has delivered its window (or
// the deadline). A worker that is done keeps reading past its window until
// the others are done too, as it would keep reading its region in a read
// of the whole file; those blocks are not counted.
func (p *filePasser) pass(ctx context.Context, deadline time.Time) (passResult, error) {
	for i := range p.accs {
		p.accs[i] = acc{}
	}
	var stopped, timeUp atomic.Bool
	var done atomic.Int32
	workers := int32(len(p.ends))
	_, err := p.pr.Run(ctx, engine.SinkFunc(func(w int, off int64, b []byte) error {
		if stopped.Load() {
			return errStop
		}
		if off >= p.ends[w] {
			return nil // past this worker's window
		}
		a := &p.accs[w]
		// Hash every byte, so that mmap pays for touching the pages.
		a.sum += xxh3.HashSeed(b, uint64(off))
		a.bytes += uint64(len(b))
		a.blocks++
		if int64(a.bytes) >= p.lens[w] && done.Add(1) == workers {
			stopped.Store(true)
			return errStop
		}
		if a.blocks%8 == 0 && time.Now().After(deadline) {
			timeUp.Store(true)
			stopped.Store(true)
			return errStop
		}
		return nil
	}))
	if errors.Is(err, errStop) {
		err = nil
	}
	var pr passResult
	for _, a := range p.accs {
		pr.sum += a.sum
		pr.bytes += int64(a.bytes)
	}
	pr.whole = err == nil && p.t.whole() && !timeUp.Load() && pr.bytes == p.t.size
	return pr, err
}
