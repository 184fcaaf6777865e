package advise

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
)

// Kind is the shape of what is read.
type Kind string

// Kinds.
const (
	// OneFile is one regular file: its blocks are read by engine engines
	// (iopath.Scan, iopath.ReadFile).
	OneFile Kind = "one_file"
	// ManyFiles is a tree or several files, each read whole by batch
	// engines (iopath.ReadFiles).
	ManyFiles Kind = "many_files"
)

// Inventory is what Inspect found.
type Inventory struct {
	Paths []string `json:"paths"`
	Kind  Kind     `json:"kind"`
	// Files is the number of regular files listed; when AtLeast is set the
	// listing stopped at the time limit and there are more.
	Files   int64 `json:"files"`
	AtLeast bool  `json:"files_at_least"`
	Bytes   int64 `json:"bytes"` // total size of the files listed
	// Median, P90 and Max are file sizes in bytes (for OneFile, all three
	// are the file's size). Median and P90 come from a uniform sample of
	// up to 100,000 sizes when more files were listed.
	Median int64 `json:"size_median_bytes"`
	P90    int64 `json:"size_p90_bytes"`
	Max    int64 `json:"size_max_bytes"`
	// Skipped counts entries found by the walk that are not read, by
	// reason ("special file", "symlink to a directory", ...).
	Skipped map[string]int64 `json:"skipped,omitempty"`
	// FirstSkipped is one example path for each reason in Skipped.
	FirstSkipped map[string]string `json:"first_skipped,omitempty"`

	sample []sampled // up to maxSample files, in walk order
}

// sampled is one file kept for the trial.
type sampled struct {
	path string
	size int64
	seq  int64 // its position in the walk
}

// Bounds of the inventory.
const (
	// DefaultMaxSample is how many files the many-files trial reads at
	// most (Options.MaxSample).
	DefaultMaxSample = 20_000
	// maxSizes is how many sizes are kept for the percentiles.
	maxSizes = 100_000
	// sampleFileMax is the largest file a many-files trial reads: batch
	// engines read each file whole into memory.
	sampleFileMax = 64 << 20
)

// InputError is an error about one of the paths given: it names the path
// and the cause, and unwraps to an *fs.PathError (so errors.Is(err,
// fs.ErrNotExist) works).
type InputError struct {
	Err *fs.PathError
}

// Error is "PATH: cause", one line.
func (e *InputError) Error() string {
	return units.QuotePath(e.Err.Path) + ": " + e.Err.Err.Error()
}

// Unwrap returns the *fs.PathError.
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(op, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &InputError{Err: &fs.PathError{Op: op, Path: path, Err: err}}
}

// ErrNothingToRead is wrapped by Inspect's error when the paths hold no
// regular file, or only an empty one.
var ErrNothingToRead = errors.New("nothing to read")

// Inspect lists paths and summarises their files. A path that is missing,
// unreadable or neither a regular file nor a directory is an
// *InputError. The walk stops at listUntil (the zero time: never), and the
// summary then covers the files listed so far (Inventory.AtLeast). The
// files kept for the trial are a uniform sample of at most maxSample of
// them (chosen with a fixed seed, so that runs on the same tree read the
// same files), in walk order.
//
// Inspect only stats, opens read-only and lists: no file's data is read,
// so the page cache is as it was.
func Inspect(ctx context.Context, paths []string, listUntil time.Time, maxSample int) (*Inventory, error) {
	if len(paths) == 0 {
		return nil, errors.New("no path given")
	}
	if maxSample <= 0 {
		maxSample = DefaultMaxSample
	}
	inv := &Inventory{Paths: paths}
	l := &lister{inv: inv, until: listUntil, maxSample: maxSample,
		rng: rand.New(rand.NewPCG(0x10fa7, 0xad71ce))}
	var dirs int
	var given []fs.FileInfo
	for _, p := range paths {
		if p == "" {
			return nil, &InputError{Err: &fs.PathError{Op: "advise", Path: `""`, Err: errors.New("empty path")}}
		}
		st, err := os.Stat(p) // a symlink given is followed, as batch does
		if err != nil {
			return nil, inputErr("stat", p, err)
		}
		// The same file or directory twice (by another name, a link)
		// would be counted, and read, twice.
		if j := slices.IndexFunc(given, func(g fs.FileInfo) bool { return os.SameFile(g, st) }); j >= 0 {
			return nil, &InputError{Err: &fs.PathError{Op: "advise", Path: p, Err: fmt.Errorf("given twice: it is %s too", paths[j])}}
		}
		given = append(given, st)
		if (st.Mode().IsRegular() || st.IsDir()) && bench.PseudoFile(p) {
			return nil, &InputError{Err: &fs.PathError{Op: "advise", Path: p, Err: bench.ErrPseudoFile}}
		}
		switch {
		case st.Mode().IsRegular():
			if err := checkReadable(p); err != nil {
				return nil, err
			}
			l.add(p, st.Size())
		case st.IsDir():
			dirs++
			if err := l.walk(ctx, p); err != nil {
				return nil, err
			}
		default:
			return nil, &InputError{Err: &fs.PathError{Op: "advise", Path: p,
				Err: fmt.Errorf("%w or directory (%s)", engine.ErrNotRegular, describeMode(st.Mode()))}}
		}
		if l.stopped {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(paths) == 1 && dirs == 0 {
		inv.Kind = OneFile
	} else {
		inv.Kind = ManyFiles
		if l.big > 0 {
			inv.Skipped = cmpOr(inv.Skipped, map[string]int64{})
			inv.FirstSkipped = cmpOr(inv.FirstSkipped, map[string]string{})
			inv.Skipped[skipTooBig] = l.big
			inv.FirstSkipped[skipTooBig] = l.firstBig
		}
	}
	if inv.Files == 0 {
		what := "under it"
		if len(paths) > 1 {
			what = "under them"
		}
		return nil, &InputError{Err: &fs.PathError{Op: "advise", Path: joinPaths(paths),
			Err: fmt.Errorf("no regular files %s: %w", what, ErrNothingToRead)}}
	}
	if inv.Kind == OneFile && inv.Bytes == 0 {
		return nil, &InputError{Err: &fs.PathError{Op: "advise", Path: paths[0],
			Err: fmt.Errorf("the file is empty: %w", ErrNothingToRead)}}
	}
	slices.Sort(l.sizes)
	inv.Median = stats.NearestRank(l.sizes, 0.5)
	inv.P90 = stats.NearestRank(l.sizes, 0.9)
	slices.SortFunc(l.sample, func(a, b sampled) int { return int(a.seq - b.seq) })
	inv.sample = l.sample
	return inv, nil
}

// checkReadable opens a regular file given as a path read-only and closes
// it, so that a file the user cannot read is said before any trial.
func checkReadable(path string) error {
	fd, err := sys.Open(path, sys.O_RDONLY|sys.O_NONBLOCK)
	if err != nil {
		return inputErr("open", path, err)
	}
	sys.Close(fd)
	return nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.String()
}

func joinPaths(paths []string) string {
	s := units.QuotePath(paths[0])
	for _, p := range paths[1:] {
		s += ", " + units.QuotePath(p)
	}
	return s
}

// lister accumulates the inventory.
type lister struct {
	inv       *Inventory
	until     time.Time
	maxSample int
	rng       *rand.Rand
	sizes     []int64 // reservoir of sizes
	sample    []sampled
	seq       int64 // files seen that may go in the sample
	big       int64 // files too large for the sample
	firstBig  string
	stopped   bool
}

// add counts one regular file.
func (l *lister) add(path string, size int64) {
	inv := l.inv
	inv.Files++
	inv.Bytes += size
	inv.Max = max(inv.Max, size)
	// Reservoir sampling (Algorithm R) keeps a uniform sample of sizes
	// and of files in bounded memory, whatever the tree's size.
	if len(l.sizes) < maxSizes {
		l.sizes = append(l.sizes, size)
	} else if j := l.rng.Int64N(inv.Files); j < maxSizes {
		l.sizes[j] = size
	}
	if size > sampleFileMax {
		if l.big == 0 {
			l.firstBig = path
		}
		l.big++
		return
	}
	l.seq++
	s := sampled{path: path, size: size, seq: l.seq}
	if len(l.sample) < l.maxSample {
		l.sample = append(l.sample, s)
	} else if j := l.rng.Int64N(l.seq); j < int64(l.maxSample) {
		l.sample[j] = s
	}
}

func (l *lister) skip(reason, path string) {
	inv := l.inv
	if inv.Skipped == nil {
		inv.Skipped = map[string]int64{}
		inv.FirstSkipped = map[string]string{}
	}
	if inv.Skipped[reason] == 0 {
		inv.FirstSkipped[reason] = path
	}
	inv.Skipped[reason]++
}

// skipTooBig is the Skipped reason of files the many-files trial leaves out.
const skipTooBig = "larger than 64 MiB (listed, left out of the trial)"

func cmpOr[M ~map[K]V, K comparable, V any](m, def M) M {
	if m == nil {
		return def
	}
	return m
}

// errStopListing ends the walk at the time limit.
var errStopListing = errors.New("listing time is up")

// walk lists the tree under root, as batch's walk would read it, but for
// the marker gen --tree leaves at a tree's root: it records how gen made
// the tree and is not one of its files (a file of the user's that only
// has its name is listed).
func (l *lister) walk(ctx context.Context, root string) error {
	n := 0
	marker := filepath.Join(root, gen.TreeMarker)
	if !gen.IsTreeMarker(marker) {
		marker = ""
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !l.until.IsZero() && time.Now().After(l.until) {
				return errStopListing
			}
		}
		if err != nil {
			if p == root {
				return inputErr("open", root, err)
			}
			// A directory that cannot be listed: its files are not read.
			l.skip("unreadable directory", p)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		typ := d.Type()
		switch {
		case typ.IsDir() && p != root && bench.PseudoFile(p):
			// /proc or /sys mounted inside the tree: nothing to
			// measure there (see bench.ErrPseudoFile).
			l.skip("pseudo-filesystem (procfs, sysfs...)", p)
			return fs.SkipDir
		case typ.IsDir() || p == marker:
			return nil
		case typ.IsRegular():
			info, err := d.Info()
			if err != nil {
				l.skip("vanished while listed", p)
				return nil
			}
			l.add(p, info.Size())
		case typ&fs.ModeSymlink != 0:
			// batch follows a symlink to a file, and reports (does not
			// walk) one to a directory.
			st, err := os.Stat(p)
			switch {
			case err != nil:
				l.skip("broken symlink", p)
			case st.Mode().IsRegular():
				l.add(p, st.Size())
			case st.IsDir():
				l.skip("symlink to a directory (not walked)", p)
			default:
				l.skip("special file (FIFO, socket or device)", p)
			}
		default:
			l.skip("special file (FIFO, socket or device)", p)
		}
		return nil
	})
	if errors.Is(err, errStopListing) {
		l.inv.AtLeast, l.stopped = true, true
		return nil
	}
	return err
}
