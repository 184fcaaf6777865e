// Package tune measures on this machine how iopath's reads of cached
// files are fastest at each size, and keeps what it found as the machine
// profile that Auto reads (like FFTW's wisdom). It is the library behind
// "iopath tune".
//
// Run writes trial files of 64 KiB to 64 MiB (up to MaxSize when asked)
// into a directory (its filesystem is the one tuned), cached, and then
// measures, at each size, iopath.ReadFile and iopath.Scan as Auto reads
// them without a profile (the default) against each path Auto could take
// instead — read, pread and mmap with one worker, pread and mmap with one
// worker per core — and against the default itself (Control). The calls
// alternate one by one, in an order shuffled for each iteration, in
// Rounds rounds, each call timed. A way replaces the default at a size
// only when the median of its per-call ratios to the default beats the
// noise (the control's ratio, or its farthest round from 1) by more than
// Margin, and it is faster in all rounds but one at most.
// Save turns the winners into rules for ranges of sizes (each measured
// size covers the sizes up to halfway, on a log scale, to its neighbours)
// and writes them, with every figure behind them, into the profile.
//
// A profile holds rules for cached files only (and for files under
// Auto's small-file size, whatever their residency): uncached reads are
// the device's, where Auto's defaults hold (docs/auto.md).
//
// Run sets the process's profile aside while it measures (the default it
// measures against is Auto without one): reads made by other goroutines
// of the process meanwhile do not use a profile either.
package tune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iopath/iopath"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
)

// The profile's types, named here for callers of Run and Save.
type (
	// Profile is a machine profile: a Key and a Section per filesystem.
	Profile = profile.Profile
	// Section is what was tuned on one filesystem: rules and trials.
	Section = profile.Section
	// Rule is how Auto reads cached files of a kind and range of sizes.
	Rule = profile.Rule
	// Trial is one kind and size measured, every way side by side.
	Trial = profile.Trial
	// Way is one way of reading a trial's file, with its median figures.
	Way = profile.Way
	// Key is what a profile is valid for: CPU model, CPUs, kernel.
	Key = profile.Key
	// State is the process's profile and its status.
	State = profile.State
)

// Kinds of trial (and of rule).
const (
	WholeFile = profile.WholeFile // iopath.ReadFile
	Blocks    = profile.Blocks    // iopath.Scan
)

const (
	// DefaultBudget is Run's time budget when Options.Budget is 0.
	DefaultBudget = 20 * time.Second
	// MinBudget and MaxBudget bound Options.Budget.
	MinBudget = 2 * time.Second
	MaxBudget = time.Hour
	// Margin is how much faster than the default a way must be (median
	// ratio) to replace it: below it the difference is within the
	// noise of a shared machine, and the default, measured on two CPUs,
	// stays.
	Margin = 0.05
	// Rounds is how many interleaved rounds each way is measured in.
	Rounds = 5
	// DefaultMaxSize is the largest trial file by default: a 256 MiB
	// trial doubled the time tune took, and its winners were the 64
	// MiB trial's (AMD EPYC VM). --max-size takes up to MaxSize.
	DefaultMaxSize = 64 << 20
	// MaxSize is the largest trial file there is.
	MaxSize = 256 << 20
)

// Control is the name of the way that is the default measured again: its
// ratio to the default is the noise of the trial.
const Control = "again"

// Sizes are the trial files' sizes, smallest first.
var Sizes = []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20}

// Options tune Run.
type Options struct {
	// Budget is about how long the measuring may take (DefaultBudget
	// when 0); writing the trial files comes on top.
	Budget time.Duration
	// MaxSize caps the trial files' size (DefaultMaxSize when 0). Run
	// lowers it further to fit the directory's free space and half the
	// available memory.
	MaxSize int64
	// Progress, when set, is told how many of the total measurements are
	// done and what is being measured.
	Progress func(done, total int, what string)
	// Temp, when set, is told each trial file's path as it is made (for
	// removal should the process be stopped at once); the function it
	// returns is called when Run has removed the file.
	Temp func(path string) (forget func())
}

// Result is what Run measured.
type Result struct {
	Key        Key
	Filesystem string // of Dir: "ext4", "tmpfs", ...
	Dir        string
	GOMAXPROCS int
	Trials     []Trial
	// Rules are the rules the trials make (see Save).
	Rules []Rule
	// Notes say what was left out and why (sizes that did not fit).
	Notes []string
	Took  time.Duration
}

// way is one candidate path of a trial.
type way struct {
	Way
	read func(ctx context.Context, path string) error
}

// Run measures in dir (see the package comment). It removes every file
// it made before it returns, and returns ctx's error when ctx ends first.
func Run(ctx context.Context, dir string, o Options) (*Result, error) {
	start := time.Now()
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.Budget < MinBudget || o.Budget > MaxBudget {
		return nil, fmt.Errorf("budget %v out of range [%v, %v]", o.Budget, MinBudget, MaxBudget)
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "trial files in", Path: dir, Err: errors.New("not a directory (name the directory whose filesystem to tune)")}
	}
	typ, avail, _, err := sys.Statfs(dir)
	if err != nil {
		return nil, err
	}
	if sys.PseudoFS(typ) {
		return nil, &fs.PathError{Op: "trial files in", Path: dir, Err: fmt.Errorf("a pseudo-filesystem (%s), not storage: name a directory on the filesystem to tune", machine.FSName(typ))}
	}
	r := &Result{Key: profile.CurrentKey(), Filesystem: machine.FSName(typ), Dir: dir, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	sizes := fitSizes(r, o.MaxSize, int64(avail), features.MemInfo("MemAvailable"))
	if len(sizes) == 0 {
		return nil, &fs.PathError{Op: "trial files in", Path: dir, Err: fmt.Errorf("no room for a trial file of %s (%s)", units.FormatSize(Sizes[0]), strings.Join(r.Notes, "; "))}
	}

	// Auto without a profile is the default every way is measured against.
	restore := profile.SetActive(profile.State{Status: "off (iopath tune is measuring)"})
	defer restore()

	files := make([]string, len(sizes))
	var forgets []func()
	defer func() {
		for _, f := range files {
			if f != "" {
				os.Remove(f)
			}
		}
		for _, forget := range forgets {
			forget()
		}
	}()
	for i, size := range sizes {
		if o.Progress != nil {
			o.Progress(0, 1, "writing "+units.FormatSize(size))
		}
		var forget func()
		files[i], forget, err = writeTrialFile(ctx, dir, size, o.Temp)
		if err != nil {
			return nil, err
		}
		forgets = append(forgets, forget)
	}

	var trials []*trial
	for _, kind := range []string{WholeFile, Blocks} {
		for i, size := range sizes {
			ws, err := waysFor(kind, files[i])
			if err != nil {
				return nil, err
			}
			t := &trial{Trial: Trial{Kind: kind, Size: size, Rounds: Rounds}, path: files[i], ways: ws,
				rng: rand.New(rand.NewPCG(uint64(size), uint64(len(trials))))}
			t.took = make([][]float64, len(ws))
			t.ratios = make([][]float64, len(ws))
			t.roundRatios = make([][]float64, len(ws))
			trials = append(trials, t)
		}
	}
	// A round that is not counted: every way reads its file once, which
	// shows that each works before anything is timed and brings the heap
	// to the size the largest trial needs.
	measuring := time.Now()
	for _, t := range trials {
		for i := range t.ways {
			if o.Progress != nil {
				o.Progress(0, len(trials)*Rounds, fmt.Sprintf("warming up: %s %s", kindVerb(t.Kind), units.FormatSize(t.Size)))
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := t.ways[i].read(ctx, t.path); err != nil {
				return nil, fmt.Errorf("%s: %w", t.ways[i].Name, err)
			}
		}
	}
	done, total := 0, len(trials)*Rounds
	for round := range Rounds {
		for _, t := range trials {
			if o.Progress != nil {
				o.Progress(done, total, fmt.Sprintf("%s %s, round %d", kindVerb(t.Kind), units.FormatSize(t.Size), round+1))
			}
			// What is left of the budget, shared by the turns left: a
			// big file's turn takes at least three calls of each way,
			// and the turns after make up for it.
			share := (o.Budget - time.Since(measuring)) / time.Duration(total-done)
			if err := t.turn(ctx, share); err != nil {
				return nil, err
			}
			done++
		}
	}
	for _, t := range trials {
		for i := range t.ways {
			t.ways[i].Rate = float64(t.Size) / stats.Median(t.took[i])
			t.ways[i].Ratio = stats.Median(t.ratios[i])
			t.Ways = append(t.Ways, t.ways[i].Way)
		}
		t.Winner = winner(t.Ways, t.roundRatios)
		r.Trials = append(r.Trials, t.Trial)
	}
	r.Rules = rulesFor(r.Trials, r.GOMAXPROCS)
	r.Took = time.Since(start)
	if o.Progress != nil {
		o.Progress(total, total, "done")
	}
	return r, nil
}

func kindVerb(kind string) string {
	if kind == WholeFile {
		return "ReadFile"
	}
	return "Scan"
}

// fitSizes are the Sizes up to maxSize that fit: all the trial files
// together in half the free space, the largest in a quarter of the
// available memory (ReadFile holds a copy of it, and the page cache
// another). What is left out is noted in r.
func fitSizes(r *Result, maxSize, avail, mem int64) []int64 {
	var out []int64
	var total int64
	for _, s := range Sizes {
		switch {
		case s > maxSize && maxSize == DefaultMaxSize:
			// Not measured by default: nothing to note.
		case s > maxSize:
			r.Notes = append(r.Notes, fmt.Sprintf("%s: over the largest size asked for (%s)", units.FormatSize(s), units.FormatSize(maxSize)))
		case (total+s)*2 > avail:
			r.Notes = append(r.Notes, fmt.Sprintf("%s: the directory's filesystem has %s free", units.FormatSize(s), units.FormatSize(avail)))
		case mem > 0 && s*4 > mem:
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %s of memory available", units.FormatSize(s), units.RoughSize(mem)))
		default:
			out = append(out, s)
			total += s
		}
	}
	return out
}

// writeTrialFile writes a file of size random bytes in dir (gen.TempFile),
// synced (so that no writeback runs while it is measured) and cached.
// forget is track's, to call once the file is removed.
func writeTrialFile(ctx context.Context, dir string, size int64, track func(string) func()) (name string, forget func(), err error) {
	forget = func() {}
	opts := gen.Options{Seed: uint64(size), Sync: true}
	if track != nil {
		opts.Temp = func(p string) func() { forget = track(p); return forget }
	}
	if name, err = gen.TempFile(ctx, dir, size, opts); err != nil {
		return "", nil, err // gen removed it, and forgot it
	}
	// Cached: read once (writing left it cached on most filesystems; a
	// sync may have let the kernel drop some).
	if _, err := iopath.ReadFile(name); err != nil {
		os.Remove(name)
		forget()
		return "", nil, err
	}
	return name, forget, nil
}

var sink atomic.Uint64

// touch reads one byte of every cache line of p, as a consumer that looks
// at the data does, so that no way wins by not bringing it in.
func touch(p []byte) uint64 {
	var s uint64
	for i := 0; i < len(p); i += 64 {
		s += uint64(p[i])
	}
	return s
}

// waysFor are the ways of a trial of kind on path: the default (Auto, as
// iopath.Plan reports it) first, then each path Auto could take that is
// not the default's.
func waysFor(kind, path string) ([]way, error) {
	access := iopath.ForReadFile
	if kind == Blocks {
		access = iopath.ForScan
	}
	def, err := iopath.Plan(path, access)
	if err != nil {
		return nil, err
	}
	n := min(runtime.GOMAXPROCS(0), profile.MaxCoreWorkers)
	type cand struct {
		engine  string
		workers int
	}
	cands := []cand{{"pread", 1}, {"pread", n}, {"mmap", 1}, {"mmap", n}}
	if kind == WholeFile {
		cands = append([]cand{{"read", 1}}, cands...)
	}
	ws := []way{
		{Way: Way{Name: "auto", Engine: def.Engine, Workers: def.Workers, Rule: def.Rule}, read: reader(kind)},
		{Way: Way{Name: Control, Engine: def.Engine, Workers: def.Workers}, read: reader(kind)},
	}
	seen := map[cand]bool{}
	for _, c := range cands {
		if seen[c] {
			continue // n == 1: ×1 twice
		}
		seen[c] = true
		// The default's own engine and workers, unless Auto reads the
		// file on a path of its own (a small file, on the calling
		// goroutine): then the engine's is another way.
		if def.Rule != "small-file" && c.engine == def.Engine && c.workers == def.Workers {
			continue
		}
		ws = append(ws, way{
			Way:  Way{Name: fmt.Sprintf("%s×%d", c.engine, c.workers), Engine: c.engine, Workers: c.workers},
			read: reader(kind, iopath.WithEngine(c.engine), iopath.WithWorkers(c.workers)),
		})
	}
	return ws, nil
}

// reader reads a file of kind with opts, as a user's code would.
func reader(kind string, opts ...iopath.Option) func(ctx context.Context, path string) error {
	if kind == WholeFile {
		return func(_ context.Context, path string) error {
			_, err := iopath.ReadFile(path, opts...)
			return err
		}
	}
	return func(ctx context.Context, path string) error {
		return iopath.Scan(ctx, path, func(_ int64, b []byte) error {
			sink.Add(touch(b))
			return nil
		}, opts...)
	}
}

// trial is one kind and size being measured.
type trial struct {
	Trial
	path string
	ways []way // the default first
	// took are each way's call times, in seconds; ratios each call's
	// time of the default ÷ the way's in the same iteration;
	// roundRatios the median of those in each round.
	took, ratios, roundRatios [][]float64
	rng                       *rand.Rand // the order of the calls
}

// turn is one round of t: iterations of one call of each way, in an order
// shuffled for each iteration, each call timed, for about
// share (at least three iterations). Ways are interleaved call by call,
// not run in slices of their own, because a way measured alone in a tight
// loop keeps its threads spinning: two workers then looked 1.05–1.09×
// faster than one read at 4 MiB and were 0.64–0.86× as fast between other
// work (AMD EPYC VM, BenchmarkVsStd). Each call's ratio to the default's
// call of the same iteration, not the totals, because a ReadFile that gets
// memory the process has not touched pays a page fault per page, and on
// that VM one call of 64 MiB took 130–300 ms where the next took 11 ms.
func (t *trial) turn(ctx context.Context, share time.Duration) error {
	took := make([]float64, len(t.ways))
	first := len(t.ratios[0])
	order := make([]int, len(t.ways))
	for i := range order {
		order[i] = i
	}
	start := time.Now()
	for it := 0; ; it++ {
		// A new order every iteration: a way that always ran right after
		// another found its buffers and threads warm (the control, next
		// to the default, ran 1.05–1.27× faster than it in Scan).
		t.rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			if err := ctx.Err(); err != nil {
				return err
			}
			t0 := time.Now()
			if err := t.ways[i].read(ctx, t.path); err != nil {
				return fmt.Errorf("%s: %w", t.ways[i].Name, err)
			}
			took[i] = time.Since(t0).Seconds()
		}
		for i := range t.ways {
			t.took[i] = append(t.took[i], took[i])
			t.ratios[i] = append(t.ratios[i], took[0]/took[i])
		}
		if it >= 2 && time.Since(start) >= share {
			break
		}
	}
	for i := range t.ways {
		t.roundRatios[i] = append(t.roundRatios[i], stats.Median(t.ratios[i][first:]))
	}
	return nil
}

// winner is the name of the fastest way (by its median ratio, Ratio)
// that beats the default (ways[0]) by more than Margin and is faster in
// all rounds but one at most (roundRatios: each round's median ratio), or
// "". The control (Control: the default measured again) never wins; its
// ratios are the noise: the margin is counted from the farthest from 1
// of its ratio and its rounds' (a round of ReadFile of 1 MiB could be
// 0.9 or 1.1 against the same call on the AMD EPYC VM).
func winner(ways []Way, roundRatios [][]float64) string {
	noise := 1.0
	for i, w := range ways {
		if w.Name == Control {
			noise = max(noise, w.Ratio)
			for _, q := range roundRatios[i] {
				noise = max(noise, q, 1/q)
			}
		}
	}
	best := -1
	for i := 1; i < len(ways); i++ {
		if ways[i].Name == Control || ways[i].Ratio <= (1+Margin)*noise {
			continue
		}
		slower := 0
		for _, q := range roundRatios[i] {
			if q <= 1 {
				slower++
			}
		}
		if slower > 1 {
			continue
		}
		if best < 0 || ways[i].Ratio > ways[best].Ratio {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return ways[best].Name
}
