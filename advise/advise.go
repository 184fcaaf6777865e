package advise

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
)

// SchemaVersion is Result's JSON schema version (the kind "advise",
// docs/schema/advise.schema.json); it changes when a field changes
// meaning, is renamed or goes away (docs/advise.md).
//
// Version 2: the JSON starts with "kind"; keys carry their units
// (residency_frac, size_median_bytes, rate_per_s, wall_s, cpu_s).
const SchemaVersion = 2

// JSONKind is the "kind" of Result's JSON form.
const JSONKind = "advise"

// DefaultBudget is the time Run takes when Options.Budget is 0.
const DefaultBudget = 20 * time.Second

// Options tune Run.
type Options struct {
	// Budget is the time Run may take, listing included; 0 means
	// DefaultBudget. Run ends close to it (within a run or two, ~1 s) on
	// large data, and earlier on small data.
	Budget time.Duration
	// MaxSample is the most files the many-files trial reads; 0 means
	// DefaultMaxSample.
	MaxSample int
	// FileLimit is the most bytes of one file a pass reads; 0 means
	// DefaultFileLimit, and it is also kept under a quarter of the
	// memory available, so that the warm trial stays warm.
	FileLimit int64
	// Procs is the candidates' parallel worker count; 0 means
	// runtime.GOMAXPROCS(0).
	Procs int
	// Progress, if set, is called as the work goes on with the time spent
	// and the budget, in tenths of a second, and what is being done.
	Progress func(done, total int, what string)

	// PerfDir, when set, records the trial with perf (package perf: perf
	// must be able to record here, perf.Probe; Run fails with its error
	// wrapping perf.ErrUnavailable when not): perf record is attached to
	// this process for the trial and switched on only while a candidate
	// reads. Each measurement gets its CPU breakdown (Measurement.Perf)
	// and a pprof profile of its samples, PerfDir/ProfileFile(label,
	// cache) (Measurement.PerfProfile). The directory is made when
	// missing. Reading the recording after the trial (perf script) takes
	// time beyond the budget: a second or more.
	PerfDir string
	// PerfFreq is perf's sampling frequency, Hz; 0 is perf.DefaultFreq.
	PerfFreq int
	// PerfReplace lets a profile replace a file of its name; without it
	// Run refuses, before the trial, when one exists (ProfileExistsError).
	PerfReplace bool
	// TrackTemp, when set, is told each temporary file Run makes (a
	// profile being written beside its name) and returns the function
	// that forgets it again: a caller that can be stopped at once removes
	// what is still tracked then. TrackTempDir is the same for a
	// temporary directory (perf's recording).
	TrackTemp    func(path string) (forget func())
	TrackTempDir func(dir string) (forget func())
}

// Result is everything Run found. Its JSON form is documented in
// docs/advise.md; field names are stable within a SchemaVersion.
type Result struct {
	// SchemaVersion is the version of the JSON form; WriteJSON writes
	// it, with JSONKind, as the first keys.
	SchemaVersion int       `json:"-"`
	Inventory     Inventory `json:"inventory"`
	// Residency is the fraction of the data's pages in the page cache
	// before the trial (-1: could not be looked at); CacheNow is the state
	// that makes (warm from 50%).
	Residency float64 `json:"residency_frac"`
	CacheNow  Cache   `json:"cache_now"`
	// RateUnit is the unit of Measurement.Rate: "files/s" or "bytes/s".
	RateUnit   string   `json:"rate_unit"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	IOURing    IOURing  `json:"io_uring"`
	Budget     float64  `json:"budget_s"`
	Elapsed    float64  `json:"elapsed_s"`
	Sample     Sample   `json:"sample"`
	Phases     []Phase  `json:"phases"`
	Candidates []string `json:"candidates"`
	// Measurements holds every candidate in every cache state; those not
	// measured say why in Skipped.
	Measurements   []Measurement  `json:"measurements"`
	Recommendation Recommendation `json:"recommendation"`
	// Auto is what iopath's Auto picks for this data, and whether the
	// trial agrees.
	Auto *AutoCheck `json:"auto"`
	// Snippet is the Go code for the recommendation.
	Snippet string   `json:"snippet"`
	Notes   []string `json:"notes"`
}

// IOURing says whether io_uring could be measured, and why not.
type IOURing struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
}

// Sample is what a pass of the trial reads.
type Sample struct {
	// Files is how many files each pass reads (ManyFiles; 1 for OneFile).
	Files int64 `json:"files"`
	// Bytes is their total size (OneFile: the bytes a pass reads, at most
	// FileLimit).
	Bytes int64 `json:"bytes"`
}

// Run inspects paths, measures the candidate paths on a sample of them
// within the budget, and recommends one. Errors about the paths are
// *InputError (a missing path, a special file, nothing to read); ctx
// cancels it.
func Run(ctx context.Context, paths []string, o Options) (*Result, error) {
	// perf's probe (a recording of /bin/true, once per process) is not
	// part of the budget.
	var pr *perfRun
	if o.PerfDir != "" {
		var err error
		if pr, err = newPerfRun(&o); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if o.Budget < 0 {
		return nil, fmt.Errorf("budget %v: must be positive", o.Budget)
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.Procs <= 0 {
		o.Procs = runtime.GOMAXPROCS(0)
	}
	o.Procs = min(o.Procs, batch.MaxWorkers)
	deadline := start.Add(o.Budget)
	progress := func(what string) {
		if o.Progress != nil {
			o.Progress(int(time.Since(start)/(100*time.Millisecond)), int(o.Budget/(100*time.Millisecond)), what)
		}
	}

	progress("listing the files")
	inv, err := Inspect(ctx, paths, start.Add(o.Budget/4), o.MaxSample)
	if err != nil {
		return nil, err
	}
	probe := features.Probe()
	res := &Result{SchemaVersion: SchemaVersion, Inventory: *inv, GOMAXPROCS: o.Procs,
		IOURing: IOURing{Available: probe.IOURing.Available, Reason: probe.IOURing.Reason},
		Budget:  o.Budget.Seconds(), Notes: []string{}}
	if inv.AtLeast {
		res.Notes = append(res.Notes, fmt.Sprintf("the listing stopped after %s files, at a quarter of the budget: there are more, and the figures are for those listed", count(inv.Files)))
	}

	// Unknown residency (mincore hides it for files this user cannot
	// write) is taken as cached; the sentence about the other state
	// covers data that is not.
	res.Residency = -1
	res.CacheNow = Warm
	if r, ok := residencyNow(inv); ok {
		res.Residency = r
		if r < 0.5 {
			res.CacheNow = Cold
		}
	} else {
		res.Notes = append(res.Notes, "whether the data is cached cannot be seen: Linux's mincore(2) reports every page of a file this user cannot write as cached (since 5.0), so the advice is for cached data, and the cold trial's drops (which work) are not checked")
	}
	// Auto's picks are measured too, so that the trial can judge them.
	autoNow, autoByState := autoPicks(inv, res.Residency)
	extra := []Candidate{autoNow.Candidate, autoByState[Warm].Candidate, autoByState[Cold].Candidate}

	var t trial
	if inv.Kind == OneFile {
		res.RateUnit = "bytes/s"
		limit := o.FileLimit
		if limit <= 0 {
			limit = DefaultFileLimit
		}
		if avail := memAvailable(); avail > 0 {
			limit = min(limit, avail/4)
		}
		ft := newFileTrial(inv, o.Procs, limit, probe)
		ft.extra = extra
		t = ft
	} else {
		res.RateUnit = "files/s"
		if len(inv.sample) == 0 {
			return nil, &InputError{Err: &fs.PathError{Op: "advise", Path: joinPaths(paths),
				Err: fmt.Errorf("all %s files are larger than 64 MiB: give one of them alone to measure the paths for one big file", count(inv.Files))}}
		}
		mt := newManyTrial(inv, o.Procs, probe)
		mt.extra = extra
		t = mt
	}
	for _, c := range t.candidates() {
		res.Candidates = append(res.Candidates, c.Label())
	}
	if !probe.IOURing.Available {
		res.Notes = append(res.Notes, "io_uring left out: "+probe.IOURing.Reason)
	}
	if pr != nil {
		// Every profile's name is known now: none is replaced unless
		// asked, and that is said before the trial.
		if err := pr.prepare(t.candidates()); err != nil {
			return nil, err
		}
		progress("starting perf")
		if err := pr.attach(ctx, o.TrackTempDir); err != nil {
			return nil, err
		}
		defer pr.close()
	}

	// Measure the other state first, so that the data is left in the
	// state it was found in (warm stays warm; cold data is dropped again
	// at the end).
	order := []Cache{Warm, Cold}
	if res.CacheNow == Warm {
		order = []Cache{Cold, Warm}
	}
	r := &runner{t: t, perf: pr, progress: progress, firstErr: map[string]error{}}
	const reserve = 50 * time.Millisecond // rendering, closing
	trialStart := time.Now()
	left := deadline.Add(-reserve).Sub(trialStart)
	share := map[Cache]float64{Warm: 0.4, Cold: 0.6}
	for i, c := range order {
		until := deadline.Add(-reserve)
		if i == 0 {
			until = trialStart.Add(time.Duration(float64(left) * share[c]))
		}
		ph, err := r.phase(ctx, c, until)
		if err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, ph)
	}
	if res.CacheNow == Cold && res.Phases[len(res.Phases)-1].Cache == Cold {
		// The cold trial ended with a pass that warmed part of the data.
		_ = t.drop(false)
	}
	setRatios(r.ms)
	if pr != nil {
		progress("reading the perf recording")
		if err := pr.finish(ctx, r.ms); err != nil {
			return nil, err
		}
		res.Notes = append(res.Notes, pr.note())
	}
	res.Measurements = r.ms
	res.Notes = append(res.Notes, r.notes...)
	for _, m := range r.ms {
		if e := r.firstErr[m.Label]; e != nil && m.Errors > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s %s: %s reads of a file failed over its rounds, for example: %v", m.Label, m.Cache, count(m.Errors), e))
		}
	}
	for _, ph := range res.Phases {
		for _, n := range ph.Notes {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %s", ph.Cache, n))
		}
		if ph.Cache == Cold && ph.Skipped == "" && ph.Residency > 0.1 {
			n := fmt.Sprintf("cold: %.0f%% of the data stayed cached after it was dropped (dirty pages not yet written back, or another process has it mapped or locked)", ph.Residency*100)
			if !ph.Valid {
				n += ": the drop did not take, and the cold figures are not used"
			}
			res.Notes = append(res.Notes, n)
		}
	}
	switch tt := t.(type) {
	case *manyTrial:
		res.Sample = Sample{Files: int64(len(tt.files)), Bytes: tt.sampleBytes()}
	case *fileTrial:
		res.Sample = Sample{Files: 1, Bytes: tt.limit}
		if !tt.whole() {
			res.Notes = append(res.Notes, fmt.Sprintf("a pass reads %s of the file's %s: each worker the start of its own region", humanSize(tt.limit), humanSize(tt.size)))
		}
	}

	rec, err := Recommend(inv, r.ms, res.Phases, res.CacheNow, res.Residency)
	if err != nil {
		why := ""
		for _, ph := range res.Phases {
			if ph.Skipped != "" {
				why = ph.Skipped
			}
		}
		if why == "" {
			why = "no candidate could run"
			if reasons := notMeasured(r.ms); reasons != "" {
				why += ": " + reasons
			}
		}
		if why == "the budget left too little time" {
			why += "; give it more"
		}
		return nil, fmt.Errorf("%w: %s", err, why)
	}
	res.Recommendation = rec
	res.Auto = checkAuto(autoNow, autoByState, res.Residency, rec, r.ms, res.Phases)
	res.Snippet = Snippet(inv.Kind, rec.Candidate)
	res.Elapsed = time.Since(start).Seconds()
	return res, nil
}

// notMeasured says why each candidate has no figures ("io_uring ×2:
// io_uring is not supported: ..."), each reason once, in order.
func notMeasured(ms []Measurement) string {
	var why []string
	for _, m := range ms {
		if m.Measured() {
			continue
		}
		reason := m.Skipped
		if reason == "" {
			reason = "no round finished"
		}
		if s := m.Label + ": " + reason; !slices.Contains(why, s) {
			why = append(why, s)
		}
	}
	return strings.Join(why, "; ")
}

// isNotSupported reports whether err says an engine cannot run here.
func isNotSupported(err error) bool {
	return errors.Is(err, engine.ErrNotSupported) || errors.Is(err, batch.ErrNotSupported)
}
