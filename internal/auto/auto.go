package auto

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
)

// Kind is the shape of the access.
type Kind int

const (
	// WholeFile is iopath.ReadFile: one file, all of it, into memory.
	WholeFile Kind = iota
	// Blocks is iopath.Scan: one file, every block once, handed to a
	// callback.
	Blocks
	// Positioned is iopath.File's ReadAt and ReadBatch: positioned reads,
	// often random 4 KiB ones.
	Positioned
	// ManyFiles is iopath.ReadFiles: many files, each whole.
	ManyFiles
)

func (k Kind) String() string {
	switch k {
	case WholeFile:
		return "whole-file"
	case Blocks:
		return "blocks"
	case Positioned:
		return "positioned"
	case ManyFiles:
		return "many-files"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Workload is what a caller is about to read.
type Workload struct {
	Kind Kind
	// Path is the file (WholeFile, Blocks, Positioned).
	Path string
	// Size is the file's size in bytes. For ManyFiles the caller leaves it
	// 0 and Decide sets it to the median size of the files it sampled.
	Size int64
	// Paths are ManyFiles' paths as given (files and/or directories).
	Paths []string
	// Direct says the caller asked for O_DIRECT.
	Direct bool
	// FS is the name of Path's filesystem ("ext4": internal/machine.FSName),
	// which picks the machine profile's section; "" when not known (Decide
	// finds it when a profile rule may apply).
	FS string
	// Resident is the fraction of the data in the page cache, in [0,1];
	// -1 means not measured yet (Decide measures it). For ManyFiles it is
	// the mean over the sampled files.
	Resident float64
}

// Choice is how to read a Workload.
type Choice struct {
	// Engine is one of Engines.File ("read", "pread", "readv", "mmap",
	// "io_uring") for WholeFile, Blocks and Positioned, and one of
	// Engines.Many ("readfile", "pool", "raw", "io_uring") for ManyFiles.
	Engine string
	// Workers is the number of goroutines (io_uring: rings), >= 1.
	Workers int
	// QueueDepth is io_uring's requests (engine) or files (batch) in
	// flight per worker; 0 means the engine's default.
	QueueDepth int
	// BlockSize is the bytes per request; 0 means the engine's default.
	BlockSize int
	// Rule is the id of the rule that decided ("big-cached", "override",
	// ...), one of RuleIDs() or RuleOverride.
	Rule string
	// Reason is one sentence saying why, with the measurement behind it,
	// or why an override or a fallback happened.
	Reason string
}

// Engines is what the packages above auto tell it: auto is under engine,
// batch and features (nothing under internal/ imports a package above
// it), so their registries and their probe are passed in, not imported.
// The root package and advise fill it with engine.Names(),
// batch.Names() and features.HaveOps.
type Engines struct {
	// File are the one-file engines' names (engine.Names()).
	File []string
	// Many are the many-files engines' names (batch.Names()).
	Many []string
	// IOURing answers whether io_uring can run with the opcodes named
	// (features.HaveOps): nil when it can, or why not. nil is taken as
	// "io_uring unavailable: not probed".
	IOURing func(ops ...string) error
}

// Env is what the rules may look at besides the workload; tests inject it.
type Env struct {
	Engines
	// GOMAXPROCS is how many goroutines may run at once; < 1 is taken as 1.
	GOMAXPROCS int
	// Override is the value of IOPATH_ENGINE ("" = none).
	Override string
	// Profile is the machine profile whose rules come before the table's
	// (nil: none; see rules.go, profileRule).
	Profile *profile.Profile
}

// EnvEngine is the environment variable that overrides the choice of
// engine: IOPATH_ENGINE=pread, IOPATH_ENGINE=io_uring, ... A name that is
// not an engine for the workload's Kind, or that cannot run here, is
// ignored, and the Choice's Reason says why.
const EnvEngine = "IOPATH_ENGINE"

// RuleOverride is Choice.Rule when IOPATH_ENGINE decided.
const RuleOverride = "override"

// RuleProfile is Choice.Rule when a rule of the machine profile decided.
const RuleProfile = "profile"

// CurrentEnv returns this process's Env: the engines e (see Engines),
// runtime.GOMAXPROCS(0), the value of IOPATH_ENGINE and the machine
// profile (profile.Active).
func CurrentEnv(e Engines) Env {
	return Env{
		Engines:    e,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Override:   strings.TrimSpace(os.Getenv(EnvEngine)),
		Profile:    profile.Active(),
	}
}

// Choose applies the rules (see rules.go and docs/auto.md) to w in env. It
// is pure: no I/O, no clock, no environment. The first rule whose
// condition holds and whose engine can run in env decides; a rule whose
// engine cannot run (io_uring unavailable, or an opcode missing) is
// skipped and the Reason of the rule that decides says why. A valid,
// available IOPATH_ENGINE then replaces the engine.
func Choose(w Workload, env Env) Choice {
	env = normalize(env)
	c := applyRules(w, env)
	if env.Override == "" {
		return c
	}
	return override(w, env, c)
}

// Decide measures what Choose needs and then calls Choose(w, CurrentEnv(e)).
//
// For one file it finds the size when w.Size <= 0 (fstat), and when
// w.Resident < 0 and the choice depends on it (Choose with the data cached
// and uncached differ: not for a small file, nor when IOPATH_ENGINE
// decides) it measures the residency on a bounded sample (cachestat, or
// mincore on an untouched mapping: see Residency). For ManyFiles, likewise, it samples at most 32 files of
// w.Paths, reading at most 16 directories with one getdents64 call each:
// a bound on its cost whatever the number of files (docs/auto.md measures
// it). A file that cannot be measured (missing, no permission, not a
// regular file) does not fail Decide: what it could not measure stays
// unknown, and the engine reports the error when it reads.
func Decide(w Workload, e Engines) Choice {
	env := CurrentEnv(e)
	if w.Kind == ManyFiles {
		if w.Resident < 0 && dependsOnResidency(w, env) {
			s := sampleFiles(w.Paths)
			if w.Size <= 0 {
				w.Size = s.medianSize
			}
			w.Resident = s.resident
		}
		return Choose(w, env)
	}
	if w.Path == "" || (w.Size > 0 && !needsFS(w, env) && (w.Resident >= 0 || !dependsOnResidency(w, env))) {
		return Choose(w, env)
	}
	fd, err := sys.Open(w.Path, sys.O_RDONLY|sys.O_NONBLOCK)
	if err != nil {
		return Choose(w, env)
	}
	defer sys.Close(fd)
	var st sys.Stat_t
	if sys.Fstat(fd, &st) != nil || st.Mode&sys.S_IFMT != sys.S_IFREG {
		return Choose(w, env)
	}
	if w.Size <= 0 || w.Size > st.Size {
		w.Size = st.Size
	}
	if needsFS(w, env) {
		if typ, err := sys.FstatfsType(fd); err == nil {
			w.FS = machine.FSName(typ)
		}
	}
	if w.Resident < 0 && dependsOnResidency(w, env) {
		if r, err := residentFD(fd, w.Size); err == nil {
			w.Resident = r
		}
	}
	return Choose(w, env)
}

// needsFS reports whether Choose needs w's filesystem: a machine
// profile has a rule for its kind and size (or the size is not known
// yet), and it is not known.
func needsFS(w Workload, env Env) bool {
	if w.FS != "" || env.Profile == nil || w.Direct {
		return false
	}
	name := profileKind(w.Kind)
	return name != "" && (w.Size <= 0 || env.Profile.Covers(name, w.Size))
}

// dependsOnResidency reports whether how Choose reads w in env (engine,
// workers, queue depth, block size) changes with the residency, so that
// Decide measures it only when it matters.
func dependsOnResidency(w Workload, env Env) bool {
	w.Resident = 0
	c0 := Choose(w, env)
	w.Resident = 1
	c1 := Choose(w, env)
	return c0.Engine != c1.Engine || c0.Workers != c1.Workers || c0.QueueDepth != c1.QueueDepth || c0.BlockSize != c1.BlockSize
}

func normalize(env Env) Env {
	if env.GOMAXPROCS < 1 {
		env.GOMAXPROCS = 1
	}
	if env.IOURing == nil {
		env.IOURing = func(...string) error { return errNotProbed }
	}
	env.Override = strings.TrimSpace(env.Override)
	return env
}

// errNotProbed is why io_uring is unavailable in an Env without a probe.
var errNotProbed = errors.New("io_uring was not probed")

// batchUringOps are the opcodes the batch io_uring engine's chains use
// (batch/uring.go); it refuses to run without any of them.
var batchUringOps = []string{"OPENAT", "STATX", "READ_FIXED", "READ", "CLOSE", "ASYNC_CANCEL"}

// uringUnavailable returns "" when the io_uring engine for kind can run in
// env, or a sentence saying why not, from the probe (env.IOURing).
func uringUnavailable(kind Kind, env Env) string {
	why := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	if kind == ManyFiles {
		return why(env.IOURing(batchUringOps...))
	}
	// engine/uring.go reads with READ_FIXED into registered buffers and
	// falls back to READ when registration is refused: either will do.
	if env.IOURing("READ_FIXED") == nil {
		return ""
	}
	return why(env.IOURing("READ"))
}

// unavailable returns "" when engine name can run for w in env, or why not.
func unavailable(w Workload, env Env, name string) string {
	switch {
	case name == "io_uring":
		return uringUnavailable(w.Kind, env)
	case name == "mmap" && w.Direct:
		return "mmap cannot read with O_DIRECT (a mapping always goes through the page cache)"
	}
	return ""
}

// override applies env.Override to the rules' choice c.
func override(w Workload, env Env, c Choice) Choice {
	name := env.Override
	ignored := func(why string) Choice {
		c.Reason = fmt.Sprintf("%s=%s ignored: %s; %s", EnvEngine, name, why, c.Reason)
		return c
	}
	if why := validFor(w.Kind, env, name); why != "" {
		return ignored(why)
	}
	if why := unavailable(w, env, name); why != "" {
		return ignored(why)
	}
	o := Choice{Engine: name, Rule: RuleOverride}
	if name == c.Engine {
		o.Workers, o.QueueDepth, o.BlockSize = c.Workers, c.QueueDepth, c.BlockSize
	} else {
		o.Workers, o.QueueDepth, o.BlockSize = defaultsFor(w, env, name, c)
	}
	o.Reason = fmt.Sprintf("%s=%s set by the user (the rules chose %s by rule %s)", EnvEngine, name, c.Engine, c.Rule)
	return o
}

// validFor returns "" when name is an engine a caller of kind can use, or
// why not.
func validFor(kind Kind, env Env, name string) string {
	if kind == ManyFiles {
		if name == "archive" {
			return "the archive engine reads a packed archive, not the files given"
		}
		if slices.Contains(env.Many, name) {
			return ""
		}
		if slices.Contains(env.File, name) {
			return fmt.Sprintf("%q is an engine for one file; many files take one of %s", name, strings.Join(batchNames(env), ", "))
		}
		return fmt.Sprintf("no such engine; many files take one of %s", strings.Join(batchNames(env), ", "))
	}
	if name == "null" {
		return "the null engine delivers no data"
	}
	if slices.Contains(env.File, name) {
		return ""
	}
	if slices.Contains(env.Many, name) {
		return fmt.Sprintf("%q is an engine for many files; one file takes one of %s", name, strings.Join(fileNames(env), ", "))
	}
	return fmt.Sprintf("no such engine; one file takes one of %s", strings.Join(fileNames(env), ", "))
}

// fileNames are the engine names a one-file Choice may carry.
func fileNames(env Env) []string {
	var out []string
	for _, n := range env.File {
		if n != "null" {
			out = append(out, n)
		}
	}
	return out
}

// batchNames are the batch engine names a ManyFiles Choice may carry.
func batchNames(env Env) []string {
	var out []string
	for _, n := range env.Many {
		if n != "archive" {
			out = append(out, n)
		}
	}
	return out
}
