package advise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/perf"
)

// Cache is the page-cache state a measurement was made in.
type Cache string

// Cache states.
const (
	// Warm: the data was read once first and is in the page cache.
	Warm Cache = "warm"
	// Cold: the data was dropped from the page cache before every pass
	// (directories and inodes stay cached).
	Cold Cache = "cold"
)

func (c Cache) other() Cache {
	if c == Warm {
		return Cold
	}
	return Warm
}

// Candidate is one way of reading: an engine and its workers.
type Candidate struct {
	// Engine is a batch engine name for ManyFiles, an engine engine name
	// for OneFile.
	Engine string `json:"engine"`
	// Workers is the goroutines (io_uring: rings) reading at once.
	Workers int `json:"workers"`
}

// Label is the candidate as tables show it: "raw ×2", "readfile".
func (c Candidate) Label() string {
	if c.Workers > 1 {
		return fmt.Sprintf("%s ×%d", c.Engine, c.Workers)
	}
	return c.Engine
}

// Round is one measured run of a candidate: one or more passes over the
// data (a pass stops early when the run's time is up), interleaved with
// the other candidates' runs.
type Round struct {
	Passes  int     `json:"passes"`
	Files   int64   `json:"files"` // files delivered (ManyFiles), with data or an error
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"wall_s"` // wall time of the passes (drops not included)
	CPU     float64 `json:"cpu_s"`  // user+system CPU of this process over the passes
	Errors  int64   `json:"errors"` // files that could not be read
}

// Measurement is a candidate in one cache state: its rounds and their
// medians.
type Measurement struct {
	Candidate
	Label    string `json:"label"`
	Cache    Cache  `json:"cache"`
	Baseline bool   `json:"baseline"` // readfile (os.ReadFile) or read ×1
	// Skipped says why the candidate was not measured (io_uring not
	// available, ...); its figures are then zero.
	Skipped string  `json:"skipped,omitempty"`
	Rounds  []Round `json:"rounds"`
	// Rate is the median over rounds of the figure candidates are ranked
	// by: files/s for ManyFiles, bytes/s for OneFile (Result.RateUnit);
	// RateMin and RateMax its range.
	Rate      float64 `json:"rate_per_s"`
	RateMin   float64 `json:"rate_min_per_s"`
	RateMax   float64 `json:"rate_max_per_s"`
	FilesPerS float64 `json:"files_per_s,omitempty"` // median; ManyFiles
	BytesPerS float64 `json:"bytes_per_s"`           // median
	// Ratio is Rate over the baseline's Rate in the same cache state (0
	// when either was not measured).
	Ratio float64 `json:"ratio"`
	// CPUPer1kFiles (ManyFiles) and CPUPerGiB (OneFile) are median CPU
	// seconds per 1,000 files delivered and per GiB delivered.
	CPUPer1kFiles float64 `json:"cpu_s_per_1k_files,omitempty"`
	CPUPerGiB     float64 `json:"cpu_s_per_gib,omitempty"`
	Errors        int64   `json:"errors"` // files that could not be read, over all rounds
	// Mismatch counts whole passes whose bytes hashed differently from
	// the first whole pass of any candidate (the data changed while
	// measured, or an engine is wrong).
	Mismatch int `json:"checksum_mismatches,omitempty"`
	// Perf is where the CPU of the measured passes went, from perf's
	// samples of all its rounds (Options.PerfDir), and PerfProfile the
	// pprof profile of those samples; nil and "" without a recording.
	Perf        *perf.Breakdown `json:"perf,omitempty"`
	PerfProfile string          `json:"perf_profile,omitempty"`

	// perfWindows are the spans perf recorded this measurement in.
	perfWindows []perfWindow
}

// Measured reports whether m has figures.
func (m *Measurement) Measured() bool { return m.Skipped == "" && len(m.Rounds) > 0 && m.Rate > 0 }

// RoundFigures are a measurement's figures, one per round that took
// time: what its medians are over.
type RoundFigures struct {
	// Rates are files/s (ManyFiles) or bytes/s (OneFile): Rate's unit.
	Rates     []float64
	FilesPerS []float64
	BytesPerS []float64
	// CPU is CPU seconds per 1,000 files (ManyFiles) or per GiB
	// (OneFile), from the rounds that delivered any.
	CPU []float64
}

// PerRound returns m's figures round by round.
func (m *Measurement) PerRound(kind Kind) RoundFigures {
	var f RoundFigures
	for _, r := range m.Rounds {
		if r.Seconds <= 0 {
			continue
		}
		fps, bps := float64(r.Files)/r.Seconds, float64(r.Bytes)/r.Seconds
		f.FilesPerS, f.BytesPerS = append(f.FilesPerS, fps), append(f.BytesPerS, bps)
		if kind == ManyFiles {
			f.Rates = append(f.Rates, fps)
			if r.Files > 0 {
				f.CPU = append(f.CPU, r.CPU/float64(r.Files)*1000)
			}
		} else {
			f.Rates = append(f.Rates, bps)
			if r.Bytes > 0 {
				f.CPU = append(f.CPU, r.CPU/(float64(r.Bytes)/(1<<30)))
			}
		}
	}
	return f
}

// summarize computes the medians from the rounds.
func (m *Measurement) summarize(kind Kind) {
	if len(m.Rounds) == 0 {
		return
	}
	m.Errors = 0
	for _, r := range m.Rounds {
		m.Errors += r.Errors
	}
	f := m.PerRound(kind)
	if len(f.Rates) == 0 {
		return
	}
	m.Rate = stats.Median(f.Rates)
	m.RateMin, m.RateMax = stats.MinMax(f.Rates)
	m.BytesPerS = stats.Median(f.BytesPerS)
	if kind == ManyFiles {
		m.FilesPerS = stats.Median(f.FilesPerS)
		if len(f.CPU) > 0 {
			m.CPUPer1kFiles = stats.Median(f.CPU)
		}
	} else if len(f.CPU) > 0 {
		m.CPUPerGiB = stats.Median(f.CPU)
	}
}

// setRatios sets every measurement's Ratio against the baseline of its
// cache state.
func setRatios(ms []Measurement) {
	base := map[Cache]float64{}
	for _, m := range ms {
		if m.Baseline && m.Measured() {
			base[m.Cache] = m.Rate
		}
	}
	for i := range ms {
		m := &ms[i]
		if b := base[m.Cache]; b > 0 && m.Measured() {
			m.Ratio = m.Rate / b
		} else {
			m.Ratio = 0
		}
	}
}

// Phase is what was done to put the data in one cache state, and how it
// went.
type Phase struct {
	Cache Cache `json:"cache"`
	// Rounds is how many rounds were measured (0 when skipped).
	Rounds int `json:"rounds"`
	// Residency is the fraction of the data's pages found cached after
	// the data was warmed, or the largest fraction found right after a
	// drop (-1: not looked at).
	Residency float64 `json:"residency_frac"`
	// Valid says the cache state held (warm: at least 80% cached; cold:
	// at most 50% cached after the drops), so that the figures can be
	// used for the recommendation.
	Valid   bool     `json:"valid"`
	Skipped string   `json:"skipped,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// passResult is what one pass over the data delivered.
type passResult struct {
	files, bytes, errors int64
	firstErr             error
	// whole is set when the pass read all the data the trial reads per
	// pass (not stopped by time), so that its sum can be compared.
	whole bool
	sum   uint64
}

// passer reads the data once per pass for one candidate.
type passer interface {
	// pass reads until all is read or until deadline, whichever first.
	pass(ctx context.Context, deadline time.Time) (passResult, error)
	close()
}

// trial is what differs between the one-file and the many-files trial.
type trial interface {
	kind() Kind
	candidates() []Candidate
	// open sets c up for passes. An error wrapping ErrNotSupported (of
	// package engine or batch) leaves c out with the reason.
	open(c Candidate) (passer, error)
	// warm reads the data once, stopping at until; it returns a note when
	// it had to read less than planned.
	warm(ctx context.Context, until time.Time) (note string, err error)
	// drop drops the data the passes since the last drop may have read,
	// or all of it.
	drop(all bool) error
	// residency is the fraction of the data's pages that are cached.
	residency() (float64, bool)
}

// errStop ends a pass when its time is up (or, for one big file, when a
// worker reaches the end of the range the trial reads).
var errStop = errors.New("advise: pass stopped")

// Limits of a run (one candidate, one round).
const (
	maxRun = 500 * time.Millisecond
	minRun = 10 * time.Millisecond
)

// roundsFor picks how many rounds fit in left for n candidates, each run
// also paying overhead (the drops of a cold run): up to 5 when each run
// gets at least 400 ms, else 3 when at least 40 ms, else fewer; 0 when not
// even one round of minRun runs fits.
func roundsFor(left time.Duration, n int, overhead time.Duration) int {
	if n == 0 {
		return 0
	}
	per := func(r int) time.Duration { return left/time.Duration(r*n) - overhead }
	switch {
	case per(5) >= 400*time.Millisecond:
		return 5
	case per(3) >= 40*time.Millisecond:
		return 3
	case per(2) >= 25*time.Millisecond:
		return 2
	case per(1) >= minRun:
		return 1
	}
	return 0
}

// runner runs the phases of a trial and keeps the results.
type runner struct {
	t        trial
	perf     *perfRun      // nil without Options.PerfDir
	ms       []Measurement // every candidate in every cache state, in order
	progress func(what string)
	// ref is the first whole pass's sum, by the number of files in the
	// pass: warming may cut a many-files sample to a prefix of it, and a
	// pass over the cut sample has its own sum.
	ref      map[int64]uint64
	notes    []string
	firstErr map[string]error // per label: an example of a file it could not read
}

func (r *runner) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(r.notes, n) {
		r.notes = append(r.notes, n)
	}
}

// phase measures every candidate in cache state c until until.
func (r *runner) phase(ctx context.Context, c Cache, until time.Time) (Phase, error) {
	ph := Phase{Cache: c, Residency: -1}
	cands := r.t.candidates()
	first := len(r.ms)
	for _, cand := range cands {
		r.ms = append(r.ms, Measurement{Candidate: cand, Label: cand.Label(), Cache: c,
			Baseline: cand == cands[0], Rounds: []Round{}})
	}
	ms := r.ms[first:]
	skipAll := func(why string) {
		ph.Skipped = why
		for i := range ms {
			if ms[i].Skipped == "" {
				ms[i].Skipped = why
			}
		}
	}
	start := time.Now()
	if until.Sub(start) < time.Duration(len(cands))*minRun {
		skipAll("the budget left too little time")
		return ph, nil
	}

	// Put the data in state c.
	var dropCost time.Duration
	if c == Warm {
		r.progress("warming the data")
		note, err := r.t.warm(ctx, start.Add(until.Sub(start)*2/5))
		if err != nil {
			return ph, err
		}
		if note != "" {
			ph.Notes = append(ph.Notes, note)
		}
		if res, ok := r.t.residency(); ok {
			ph.Residency = res
			ph.Valid = res >= 0.8
			if !ph.Valid {
				ph.Notes = append(ph.Notes, fmt.Sprintf("only %.0f%% of the data stayed cached after it was read (too little memory?): the warm figures are not warm", res*100))
			}
		} else {
			ph.Valid = true
		}
	} else {
		r.progress("dropping the data from the page cache")
		var err error
		if dropCost, err = r.firstDrop(&ph, start.Add(min(time.Second, until.Sub(start)/10))); err != nil {
			return ph, err
		}
	}

	// Set each candidate up; those that cannot run here are left out.
	type live struct {
		m *Measurement
		p passer
	}
	var active []live
	defer func() {
		for _, a := range active {
			a.p.close()
		}
	}()
	for i := range ms {
		if ms[i].Skipped != "" {
			continue
		}
		p, err := r.t.open(ms[i].Candidate)
		if err != nil {
			if !isNotSupported(err) {
				return ph, err
			}
			ms[i].Skipped = err.Error()
			continue
		}
		active = append(active, live{&ms[i], p})
	}

	rounds := roundsFor(time.Until(until), len(active), dropCost)
	if rounds == 0 {
		skipAll("the budget left too little time")
		return ph, nil
	}
	for round := range rounds {
		left := time.Until(until)
		if round > 0 && left < time.Duration(len(active))*minRun {
			ph.Notes = append(ph.Notes, fmt.Sprintf("%d of %d rounds: the time was up", round, rounds))
			break
		}
		runCap := left/time.Duration((rounds-round)*len(active)) - dropCost
		runCap = min(max(runCap, minRun), maxRun)
		n := len(active)
		for i := range n {
			// Rotate the order each round, so that no candidate always
			// runs right after the same one (or right after a drop).
			a := active[(i+round)%n]
			if a.m.Skipped != "" {
				continue
			}
			r.progress(fmt.Sprintf("%s %s, round %d of %d", a.m.Label, c, round+1, rounds))
			rd, err := r.run(ctx, a.p, a.m, c, runCap, until, &ph, i == 0)
			if err != nil {
				if ctx.Err() != nil {
					return ph, ctx.Err()
				}
				if r.perf != nil && r.perf.err != nil {
					return ph, r.perf.err
				}
				// A candidate that cannot run here, or fails on this
				// data (too many open files, ...), is left out; the
				// others still give an answer.
				a.m.Skipped = err.Error()
				if !isNotSupported(err) {
					a.m.Skipped = "failed: " + a.m.Skipped
				}
				a.m.Rounds = a.m.Rounds[:0]
				a.m.perfWindows = nil
				continue
			}
			a.m.Rounds = append(a.m.Rounds, rd)
		}
		ph.Rounds = round + 1
	}
	for i := range ms {
		ms[i].summarize(r.t.kind())
	}
	return ph, nil
}

// firstDrop drops the data and checks that it left the page cache. Pages
// not yet written back cannot be dropped, but the first drop starts their
// writeback (POSIX_FADV_DONTNEED does), so a data set written just before
// is dropped again, every 50 ms until retryUntil, until at most half of it
// is left. It returns what one drop costs.
func (r *runner) firstDrop(ph *Phase, retryUntil time.Time) (time.Duration, error) {
	for {
		t0 := time.Now()
		if err := r.t.drop(true); err != nil {
			return 0, err
		}
		cost := time.Since(t0)
		res, ok := r.t.residency()
		if !ok {
			ph.Valid = true
			return cost, nil
		}
		ph.Residency = res
		ph.Valid = res <= 0.5
		if ph.Valid || time.Now().Add(50*time.Millisecond).After(retryUntil) {
			return cost, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkDrop looks at how much of the data is still cached right after a
// drop and records the worst.
func (r *runner) checkDrop(ph *Phase) {
	res, ok := r.t.residency()
	if !ok {
		return
	}
	if res > ph.Residency {
		ph.Residency = res
	}
	if ph.Residency > 0.5 {
		ph.Valid = false
	}
}

// run measures one candidate for about runCap: passes until their time
// adds up to runCap (at least one; a cold run drops the data before each
// pass, outside the time), and none past the phase's end, until (a run
// that starts past it still gets minRun/2, so that it has a figure).
//
// With a perf recording, perf records the whole of a warm run, and each
// pass of a cold run (not its drops).
func (r *runner) run(ctx context.Context, p passer, m *Measurement, c Cache, runCap time.Duration, until time.Time, ph *Phase, checkDrop bool) (rd Round, err error) {
	var spent time.Duration
	rec := window{p: r.perf, m: m}
	defer func() {
		if oerr := rec.off(); err == nil {
			err = oerr
		}
	}()
	perPass := c == Cold
	if !perPass {
		if err := rec.on(); err != nil {
			return rd, err
		}
	}
	wallStart := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return rd, err
		}
		if c == Cold {
			if err := r.t.drop(false); err != nil {
				return rd, err
			}
			if checkDrop && rd.Passes == 0 {
				r.checkDrop(ph)
			}
		}
		if perPass {
			if err := rec.on(); err != nil {
				return rd, err
			}
		}
		u0, _ := metrics.SelfUsage()
		t0 := time.Now()
		deadline := t0.Add(runCap - spent)
		if deadline.After(until) {
			deadline = until
		}
		if rd.Passes == 0 && deadline.Sub(t0) < minRun/2 {
			deadline = t0.Add(minRun / 2)
		}
		pr, err := p.pass(ctx, deadline)
		el := time.Since(t0)
		u1, _ := metrics.SelfUsage()
		if err != nil {
			return rd, err
		}
		if perPass {
			if err := rec.off(); err != nil {
				return rd, err
			}
		}
		spent += el
		d := u1.Sub(u0)
		rd.Passes++
		rd.Files += pr.files
		rd.Bytes += pr.bytes
		rd.Errors += pr.errors
		rd.Seconds = spent.Seconds()
		rd.CPU += (d.User + d.System).Seconds()
		if pr.firstErr != nil && r.firstErr[m.Label] == nil {
			r.firstErr[m.Label] = pr.firstErr
		}
		if pr.whole {
			if ref, ok := r.ref[pr.files]; !ok {
				if r.ref == nil {
					r.ref = map[int64]uint64{}
				}
				r.ref[pr.files] = pr.sum
			} else if pr.sum != ref {
				m.Mismatch++
				r.note("%s delivered different bytes from the other paths on a whole pass (the data changed while it was measured, or the engine is wrong)", m.Label)
			}
		}
		if now := time.Now(); spent >= runCap || now.Sub(wallStart) >= 2*runCap+50*time.Millisecond || now.After(until) {
			return rd, nil
		}
		if pr.files == 0 && pr.bytes == 0 {
			return rd, nil // nothing to read (every file vanished): do not spin
		}
	}
}
