package advise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iopath/iopath/internal/outfile"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/perf"
)

// With Options.PerfDir, the trial is recorded with perf (package perf):
// perf record is attached to this process once, before the first phase,
// with its events off, and switched on only while a candidate reads —
// around each warm run, around each pass of a cold run (so that the drops
// between the passes are not recorded) — never while the data is warmed,
// dropped or looked at with mincore. Each such window is kept with its
// Measurement; after the trial the recording is read once, each
// measurement's samples (all its windows') are broken down into
// Measurement.Perf and written as a pprof profile, PerfDir/ProfileFile.

// ProfileExt ends the name of every profile --perf writes.
const ProfileExt = ".pb.gz"

// ProfileFile is the name of the pprof profile of the candidate labelled
// label in cache state c, within Options.PerfDir: the label with "×"
// written x, spaces as "-" and any other character a file name should not
// carry as "_", then the cache state: "raw-x2-warm.pb.gz".
func ProfileFile(label string, c Cache) string {
	var b strings.Builder
	for _, r := range label {
		switch {
		case r == '×':
			b.WriteByte('x')
		case r == ' ':
			b.WriteByte('-')
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.' && b.Len() > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String() + "-" + string(c) + ProfileExt
}

// ProfileExistsError is Run's error when a profile would replace a file
// and Options.PerfReplace is not set. It is found before the trial starts
// (every name is known once the paths are inspected), or, for a file that
// appeared during the trial, when the profile is written.
// errors.Is(err, fs.ErrExist) holds for it.
type ProfileExistsError struct{ Path string }

func (e *ProfileExistsError) Error() string {
	return units.QuotePath(e.Path) + ": a file of this name exists; the perf profile does not replace it"
}

// Is makes errors.Is(err, fs.ErrExist) hold.
func (e *ProfileExistsError) Is(target error) bool { return target == fs.ErrExist }

// perfWindow is a span of CLOCK_MONOTONIC time (ns) during which perf
// recorded a candidate.
type perfWindow struct{ from, to int64 }

// perfRun is the recording of a trial.
type perfRun struct {
	info    *perf.Info
	freq    int
	dir     string
	replace bool
	track   func(path string) (forget func())
	rec     *perf.Recording
	// err is the first failure to switch the recording: it ends the trial.
	err error
}

// newPerfRun checks that perf can record here (perf.Probe).
func newPerfRun(o *Options) (*perfRun, error) {
	info, err := perf.Probe()
	if err != nil {
		return nil, err
	}
	return &perfRun{info: info, freq: o.PerfFreq, dir: o.PerfDir, replace: o.PerfReplace, track: o.TrackTemp}, nil
}

// prepare makes the directory and, unless replacing, refuses a profile
// name that exists, for every candidate in both cache states.
func (p *perfRun) prepare(cands []Candidate) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	var names []string
	for _, c := range []Cache{Warm, Cold} {
		for _, cand := range cands {
			n := ProfileFile(cand.Label(), c)
			if slices.Contains(names, n) {
				return fmt.Errorf("perf: two candidates would write the profile %s", n)
			}
			names = append(names, n)
		}
	}
	if p.replace {
		return nil
	}
	for _, n := range names {
		path := filepath.Join(p.dir, n)
		if _, err := os.Lstat(path); err == nil {
			return &ProfileExistsError{Path: path}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("perf: %w", err)
		}
	}
	return nil
}

// attach starts perf record on this process, events off.
func (p *perfRun) attach(ctx context.Context, trackDir func(string) func()) error {
	rec, err := perf.Attach(ctx, os.Getpid(), perf.Options{Track: trackDir, Freq: p.freq})
	if err != nil {
		return err
	}
	p.rec = rec
	return nil
}

// close stops perf if it still runs and removes its temporary directory.
func (p *perfRun) close() {
	if p != nil && p.rec != nil {
		p.rec.Close()
	}
}

// window is one span of recording for a measurement: on switches perf on,
// off switches it off and keeps the span in m. Both do nothing without a
// recording (p nil). A failure is kept in p.err and returned.
type window struct {
	p    *perfRun
	m    *Measurement
	from int64
	open bool
}

func (w *window) on() error {
	if w.p == nil || w.open {
		return nil
	}
	t, err := w.p.rec.Enable()
	if err != nil {
		return w.p.fail(err)
	}
	w.from, w.open = t, true
	return nil
}

func (w *window) off() error {
	if w.p == nil || !w.open {
		return nil
	}
	w.open = false
	t, err := w.p.rec.Disable()
	if err != nil {
		return w.p.fail(err)
	}
	w.m.perfWindows = append(w.m.perfWindows, perfWindow{w.from, t})
	return nil
}

func (p *perfRun) fail(err error) error {
	if p.err == nil {
		p.err = fmt.Errorf("perf: the recording failed: %w", err)
	}
	return p.err
}

// finish ends the recording, reads it, and gives each measured
// measurement its breakdown and its profile.
func (p *perfRun) finish(ctx context.Context, ms []Measurement) error {
	if err := p.rec.Stop(); err != nil {
		return err // "perf record -p: ..."
	}
	if !slices.ContainsFunc(ms, func(m Measurement) bool { return m.Measured() && len(m.perfWindows) > 0 }) {
		return nil // nothing was measured: Run says why
	}
	s, err := p.rec.Read(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err // "perf script: ...", "perf wrote no recording..."
	}
	per := assignSamples(s, ms)
	for i := range ms {
		m := &ms[i]
		if !m.Measured() || len(m.perfWindows) == 0 {
			continue
		}
		ws := per[i]
		path := filepath.Join(p.dir, ProfileFile(m.Label, m.Cache))
		if err := outfile.Write(path, p.replace, p.track, ws.WriteProfile); err != nil {
			if errors.Is(err, outfile.ErrExists) {
				return &ProfileExistsError{Path: path}
			}
			return fmt.Errorf("perf: profile %s: %w", units.QuotePath(path), err)
		}
		b := ws.Breakdown()
		m.Perf, m.PerfProfile = &b, path
	}
	return nil
}

// assignSamples gives each measurement (by index) the samples taken in
// its windows: one pass over the samples, each found among the windows
// (which do not overlap) by binary search.
func assignSamples(s *perf.Samples, ms []Measurement) []*perf.Samples {
	type span struct {
		perfWindow
		m int
	}
	var spans []span
	for i := range ms {
		for _, w := range ms[i].perfWindows {
			spans = append(spans, span{w, i})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	per := make([]*perf.Samples, len(ms))
	for i := range ms {
		if len(ms[i].perfWindows) > 0 {
			per[i] = s.Window(1, 0) // no samples, s's frames
		}
	}
	for _, smp := range s.List {
		// The last window starting at or before the sample.
		j, found := slices.BinarySearchFunc(spans, smp.Time, func(sp span, t int64) int {
			switch {
			case sp.from < t:
				return -1
			case sp.from > t:
				return 1
			}
			return 0
		})
		if !found {
			j--
		}
		if j < 0 || smp.Time > spans[j].to {
			continue
		}
		w := per[spans[j].m]
		w.List = append(w.List, smp)
	}
	return per
}

// note says how the trial was recorded, for Result.Notes.
func (p *perfRun) note() string {
	return fmt.Sprintf("recorded with %s, only while the candidates read (not while the data was warmed, dropped or checked): each measurement's profile is in %s as CANDIDATE-CACHE%s (go tool pprof -http :8080 FILE); the figures include perf's sampling, a few %% of CPU",
		p.info.Describe(p.freq), units.QuotePath(p.dir), ProfileExt)
}
