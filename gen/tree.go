package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
)

// Limits and defaults of Tree.
const (
	// MaxTreeFiles is the most files Tree writes in one tree.
	MaxTreeFiles = 10_000_000
	// DefaultFanOut is TreeOptions.FanOut when it is 0.
	DefaultFanOut = 100
	// TreeMarker is the file Tree writes at the root of every tree it
	// makes, holding the tree's parameters. Tree writes only into an empty
	// directory or one holding a marker with exactly its own parameters.
	TreeMarker = ".iopath-tree"

	// LogNormalSigma is the σ of the log-normal distribution (of the
	// natural logarithm of the size): with it the middle half of the sizes
	// lies within a factor of about 2.2 of the median, and one file in a
	// hundred is 16 times the median or more, like the files of a source
	// tree.
	LogNormalSigma = 1.2
	// DefaultLogNormalMedian is the median of "lognormal" without a size.
	DefaultLogNormalMedian = 8 << 10
	// MaxLogNormalSize is the largest size a log-normal draw gives: larger
	// draws are clamped to it (and smaller than 1 byte to 1 byte). With
	// the default median about one draw in 35 million is clamped.
	MaxLogNormalSize = 16 << 20
)

// blockSize is what Disk assumes each file and directory occupies at least,
// and what it rounds file sizes up to.
const blockSize = 4096

type distKind uint8

const (
	distFixed distKind = iota + 1
	distUniform
	distLogNormal
)

// Dist is a distribution of file sizes: a fixed size, a uniform range or a
// log-normal distribution with a given median. The zero Dist is invalid;
// make one with ParseDist, FixedSize, UniformSize or LogNormalSize.
type Dist struct {
	kind     distKind
	min, max int64 // fixed: min == max; uniform: [min, max]; lognormal: median in min
}

// FixedSize is the distribution of one size, n > 0 bytes.
func FixedSize(n int64) Dist { return Dist{kind: distFixed, min: n, max: n} }

// UniformSize is the uniform distribution over [lo, hi] bytes, 0 < lo <= hi.
func UniformSize(lo, hi int64) Dist { return Dist{kind: distUniform, min: lo, max: hi} }

// LogNormalSize is the log-normal distribution with the given median (in
// bytes) and σ = LogNormalSigma, clamped to [1, MaxLogNormalSize].
func LogNormalSize(median int64) Dist { return Dist{kind: distLogNormal, min: median} }

// ParseDist parses a size distribution:
//
//	4KiB            every file is 4 KiB
//	1KiB-64KiB      uniform between 1 KiB and 64 KiB, both included
//	lognormal       log-normal, median DefaultLogNormalMedian (8 KiB)
//	lognormal:11KiB log-normal with median 11 KiB
//
// Sizes are written as units.ParseSize takes them and must be at least 1
// byte; a log-normal median must be at most MaxLogNormalSize.
func ParseDist(s string) (Dist, error) {
	orig := s
	s = strings.TrimSpace(s)
	size := func(v string) (int64, error) {
		if strings.TrimSpace(v) == "" {
			return 0, fmt.Errorf("size distribution %q: want SIZE, LO-HI, lognormal or lognormal:MEDIAN, like 4KiB, 1KiB-64KiB or lognormal:11KiB", orig)
		}
		n, err := units.ParseSize(v)
		if err != nil {
			return 0, err
		}
		if n < 1 {
			return 0, fmt.Errorf("size distribution %q: sizes must be at least 1 byte", orig)
		}
		return n, nil
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "lognormal"); ok {
		d := LogNormalSize(DefaultLogNormalMedian)
		if rest == "" {
			return d, nil
		}
		m, ok := strings.CutPrefix(rest, ":")
		if !ok {
			return Dist{}, fmt.Errorf("size distribution %q: want lognormal or lognormal:MEDIAN, like lognormal:11KiB", orig)
		}
		n, err := size(m)
		if err != nil {
			return Dist{}, err
		}
		if n > MaxLogNormalSize {
			return Dist{}, fmt.Errorf("size distribution %q: the median must be at most %s", orig, units.FormatSize(MaxLogNormalSize))
		}
		d.min = n
		return d, nil
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err := size(lo)
		if err != nil {
			return Dist{}, err
		}
		b, err := size(hi)
		if err != nil {
			return Dist{}, err
		}
		if a > b {
			return Dist{}, fmt.Errorf("size distribution %q: the range is empty (%s > %s)", orig, units.FormatSize(a), units.FormatSize(b))
		}
		return UniformSize(a, b), nil
	}
	n, err := size(s)
	if err != nil {
		return Dist{}, err
	}
	return FixedSize(n), nil
}

// String is d in the form ParseDist takes, e.g. "4KiB", "1KiB-64KiB",
// "lognormal:8KiB".
func (d Dist) String() string {
	switch d.kind {
	case distFixed:
		return exactSize(d.min)
	case distUniform:
		return exactSize(d.min) + "-" + exactSize(d.max)
	case distLogNormal:
		return "lognormal:" + exactSize(d.min)
	}
	return "invalid"
}

// exactSize formats n with the largest binary unit that divides it, else
// in bytes: 4KiB, 3MiB, 4097B. ParseSize gives n back.
func exactSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Fixed reports the size of a fixed distribution.
func (d Dist) Fixed() (int64, bool) { return d.min, d.kind == distFixed }

func (d Dist) valid() error {
	switch d.kind {
	case distFixed, distUniform:
		if d.min >= 1 && d.min <= d.max {
			return nil
		}
	case distLogNormal:
		if d.min >= 1 && d.min <= MaxLogNormalSize {
			return nil
		}
	default:
		return errors.New("no size distribution")
	}
	return fmt.Errorf("invalid size distribution %s", d)
}

// Max is the largest size d gives.
func (d Dist) Max() int64 {
	if d.kind == distLogNormal {
		return MaxLogNormalSize
	}
	return d.max
}

// Sample draws a size from d using r.
func (d Dist) Sample(r *rand.Rand) int64 {
	switch d.kind {
	case distUniform:
		return d.min + r.Int64N(d.max-d.min+1)
	case distLogNormal:
		v := math.Round(float64(d.min) * math.Exp(LogNormalSigma*r.NormFloat64()))
		return int64(min(max(v, 1), MaxLogNormalSize))
	}
	return d.min
}

// TreeOptions control Tree.
type TreeOptions struct {
	// Files is how many files to write, 1 to MaxTreeFiles.
	Files int
	// Size is the distribution of the files' sizes.
	Size Dist
	// Seed selects the sizes and the content: the same options always give
	// the same names, sizes and bytes.
	Seed uint64
	// FanOut is the most entries of any directory of the tree (files or
	// subdirectories, and the marker at the root), at least 2; 0 means
	// DefaultFanOut.
	FanOut int
	// Progress, when set, is called on Tree's goroutine with the files
	// written so far and the total: once at the start, at most about ten
	// times a second while writing, and once at the end.
	Progress func(done, total int)

	// write, when set, replaces write(2); tests inject faults with it.
	write func(fd int, b []byte) (int, error)
}

// TreePlan is what Tree would do in a directory.
type TreePlan struct {
	Files int   // files to write
	Dirs  int   // directories under the root
	Depth int   // directory levels between the root and the files
	Bytes int64 // total size of the files
	// Disk estimates the space the tree takes: each file rounded up to
	// 4 KiB, and 4 KiB per directory.
	Disk int64
	// Regenerate is set when the directory holds a tree Tree made with the
	// same options, which Tree will write again.
	Regenerate bool
	// CreateRoot is set when the directory does not exist yet.
	CreateRoot bool
}

// TreeStats say what Tree wrote.
type TreeStats struct {
	Files int   // files written completely
	Bytes int64 // their total size
	// Regenerated is set when Tree wrote over a tree it had made before.
	Regenerated bool
}

// PlanTree checks opts and dir as Tree does, without writing anything, and
// says what Tree would write. Its errors are Tree's.
func PlanTree(dir string, opts TreeOptions) (TreePlan, error) {
	opts, err := opts.normalize(dir)
	if err != nil {
		return TreePlan{}, err
	}
	return plan(dir, opts)
}

func (o TreeOptions) normalize(dir string) (TreeOptions, error) {
	if o.FanOut == 0 {
		o.FanOut = DefaultFanOut
	}
	var err error
	switch {
	case dir == "":
		err = errors.New("empty directory name")
	case o.Files < 1 || o.Files > MaxTreeFiles:
		err = fmt.Errorf("files %d out of range [1, %d]", o.Files, MaxTreeFiles)
	case o.FanOut < 2:
		err = fmt.Errorf("fan-out %d is less than 2", o.FanOut)
	default:
		err = o.Size.valid()
	}
	if err != nil {
		return o, &fs.PathError{Op: "gen", Path: dir, Err: err}
	}
	return o, nil
}

func plan(dir string, opts TreeOptions) (TreePlan, error) {
	lay := newLayout(opts.Files, opts.FanOut)
	p := TreePlan{Files: opts.Files, Dirs: lay.dirs(), Depth: lay.depth}
	sz := newSizer(opts)
	for i := range opts.Files {
		n := sz.size(i)
		p.Bytes = addSat(p.Bytes, n)
		p.Disk = addSat(p.Disk, (n+blockSize-1)/blockSize*blockSize)
	}
	p.Disk = addSat(p.Disk, int64(p.Dirs)*blockSize)

	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		parent := filepath.Dir(dir)
		pst, err := os.Stat(parent)
		if err == nil && !pst.IsDir() {
			err = sys.ENOTDIR
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return p, &fs.PathError{Op: "gen", Path: dir, Err: fmt.Errorf("%w (its parent %s must be a directory)", err, parent)}
		}
		p.CreateRoot = true
		return p, nil
	case err != nil:
		return p, err
	case !st.IsDir():
		return p, &fs.PathError{Op: "gen", Path: dir, Err: sys.ENOTDIR}
	}
	marker := filepath.Join(dir, TreeMarker)
	have, err := os.ReadFile(marker)
	switch {
	case err == nil:
		if string(have) != opts.marker() {
			return p, &fs.PathError{Op: "gen", Path: dir, Err: foreignTreeError{string(have)}}
		}
		p.Regenerate = true
		return p, nil
	case !errors.Is(err, fs.ErrNotExist):
		return p, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return p, err
	}
	names, err := f.Readdirnames(1)
	f.Close()
	if len(names) > 0 {
		return p, &fs.PathError{Op: "gen", Path: dir, Err: notTreeError{}}
	}
	if err != nil && err != io.EOF {
		return p, err
	}
	return p, nil
}

// addSat is a+b for non-negative a and b, at most math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// notTreeError is the cause when the directory is not empty and holds no
// marker.
type notTreeError struct{}

func (notTreeError) Error() string {
	return "not empty, and not a tree made by iopath gen --tree (" + TreeMarker + " is missing); refusing to write into it"
}
func (notTreeError) Is(target error) bool { return target == fs.ErrExist }

// foreignTreeError is the cause when the marker's parameters differ.
type foreignTreeError struct{ marker string }

func (e foreignTreeError) Error() string {
	params := strings.Join(strings.Fields(strings.TrimPrefix(e.marker, markerHeader)), " ")
	if !strings.HasPrefix(e.marker, markerHeader) {
		params = "unreadable " + TreeMarker
	}
	return "holds a tree made with other parameters (" + params + "); use the same parameters to regenerate it, or another directory"
}
func (foreignTreeError) Is(target error) bool { return target == fs.ErrExist }

const markerHeader = "iopath gen --tree\n"

// markerLine is the marker's second and last line, as marker writes it.
var markerLine = regexp.MustCompile(`^files=[0-9]+ size=[^ \n]+ seed=[0-9]+ fanout=[0-9]+\n$`)

// maxMarker is more than any marker Tree writes.
const maxMarker = 512

// IsTreeMarker reports whether the file at path is the marker Tree writes
// at the root of each tree it makes (named TreeMarker, holding the tree's
// parameters in Tree's format), so that a program that lists or reads
// such a tree can leave it out: it is gen's record of the tree, not one of
// its files. A file that only has the name is not taken for it.
func IsTreeMarker(path string) bool {
	if filepath.Base(path) != TreeMarker {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxMarker {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMarker+1))
	return err == nil && IsTreeMarkerData(b)
}

// IsTreeMarkerData reports whether data, the content of a file named
// TreeMarker at a tree's root (read from an archive of the tree, say), is
// Tree's marker.
func IsTreeMarkerData(data []byte) bool {
	rest, ok := bytes.CutPrefix(data, []byte(markerHeader))
	return ok && len(data) <= maxMarker && markerLine.Match(rest)
}

// marker is the content of the marker file for opts.
func (o TreeOptions) marker() string {
	return fmt.Sprintf("%sfiles=%d size=%s seed=%d fanout=%d\n", markerHeader, o.Files, o.Size, o.Seed, o.FanOut)
}

// Tree writes a tree of opts.Files files of pseudo-random data under dir,
// with sizes drawn from opts.Size, and returns what it wrote.
//
// Layout: file i (from 0) is named file-NNNN.dat with i in decimal, padded
// to the width of Files-1, and lies Depth directories deep, in directories
// named by the digits of i in base FanOut (each padded to the width of
// FanOut-1) from the most significant down, the last digit being the file's
// place in its directory. With 100000 files and FanOut 100, file 31742 is
// dir/03/17/file-31742.dat. Depth is the least that keeps every directory
// to FanOut entries, the root's marker included. Names depend only on Files
// and FanOut; sizes on Seed, Size and i; file i's bytes are those File
// writes with a seed derived from Seed and i.
//
// Safety: dir is created if missing (its parent must exist). An existing
// dir must be empty, or hold the marker TreeMarker of a tree made with
// exactly the same options, which is then written again: its files are
// replaced, anything else in it left alone. Any other dir is refused, with
// an error for which errors.Is(err, fs.ErrExist) holds, and nothing is
// written. Symbolic links are never followed below dir.
//
// Tree fails early when the filesystem clearly lacks the space (PlanTree's
// Disk estimate). On any error, or when ctx is cancelled, it stops
// promptly; every file it leaves is complete (a partially written file is
// removed), and the error says how many it wrote. The marker stays, so the
// same call again rewrites the whole tree. Files are written by up to two
// goroutines, one open, write and close per file.
func Tree(ctx context.Context, dir string, opts TreeOptions) (TreeStats, error) {
	opts, err := opts.normalize(dir)
	if err != nil {
		return TreeStats{}, err
	}
	p, err := plan(dir, opts)
	if err != nil {
		return TreeStats{}, err
	}
	if !p.Regenerate {
		spaceDir := dir
		if p.CreateRoot {
			spaceDir = filepath.Dir(dir)
		}
		if err := checkSpace(dir, spaceDir, p.Disk); err != nil {
			return TreeStats{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return TreeStats{}, &fs.PathError{Op: "gen", Path: dir, Err: err}
	}
	if p.CreateRoot {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return TreeStats{}, err
		}
	}
	if !p.Regenerate {
		if err := writeMarker(dir, opts.marker()); err != nil {
			if p.CreateRoot {
				os.Remove(dir)
			}
			return TreeStats{}, err
		}
	}
	t := &treeWriter{
		ctx:   ctx,
		dir:   dir,
		opts:  opts,
		lay:   newLayout(opts.Files, opts.FanOut),
		regen: p.Regenerate,
		write: opts.write,
	}
	if t.write == nil {
		t.write = sys.Write
	}
	return t.run()
}

// writeMarker creates the marker in dir, refusing one that appeared since
// plan looked (O_EXCL), and removes it again if it cannot be written whole.
func writeMarker(dir, content string) error {
	path := filepath.Join(dir, TreeMarker)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// layout maps file numbers to paths.
type layout struct {
	n, fan, depth int
	pow           []int // pow[k] = fan^k, k <= depth
	dirW, fileW   int
}

func newLayout(n, fan int) layout {
	l := layout{n: n, fan: fan, pow: []int{1}}
	// The root holds ceil(n/fan^depth) entries and the marker.
	for (n+l.pow[l.depth]-1)/l.pow[l.depth] > fan-1 {
		l.pow = append(l.pow, l.pow[l.depth]*fan)
		l.depth++
	}
	l.dirW = len(strconv.Itoa(fan - 1))
	l.fileW = len(strconv.Itoa(n - 1))
	return l
}

// dirs is the number of directories under the root.
func (l layout) dirs() int {
	d := 0
	for k := 1; k <= l.depth; k++ {
		d += (l.n + l.pow[k] - 1) / l.pow[k]
	}
	return d
}

// leaves is the number of directories holding files (the root when depth
// is 0), each holding files [leaf*fan, leaf*fan+fan) but the last.
func (l layout) leaves() int {
	if l.depth == 0 {
		return 1
	}
	return (l.n + l.fan - 1) / l.fan
}

// leafFiles is the range of files in leaf.
func (l layout) leafFiles(leaf int) (first, end int) {
	if l.depth == 0 {
		return 0, l.n
	}
	return leaf * l.fan, min(l.n, (leaf+1)*l.fan)
}

// dirPath appends the directories of file i, relative to the root and
// without a trailing slash, to b.
func (l layout) dirPath(b []byte, i int) []byte {
	for k := l.depth; k >= 1; k-- {
		if k < l.depth {
			b = append(b, '/')
		}
		d := i / l.pow[k]
		if k < l.depth {
			d %= l.fan
		}
		b = appendPadded(b, d, l.dirW)
	}
	return b
}

// fileName appends file i's name to b.
func (l layout) fileName(b []byte, i int) []byte {
	b = append(b, "file-"...)
	b = appendPadded(b, i, l.fileW)
	return append(b, ".dat"...)
}

// Path is file i's path relative to the root.
func (l layout) path(i int) string {
	b := l.dirPath(nil, i)
	if len(b) > 0 {
		b = append(b, '/')
	}
	return string(l.fileName(b, i))
}

func appendPadded(b []byte, v, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(v), 10)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// sizer draws file sizes: file i's size is the first draw of a generator
// seeded from (Seed, i), so it does not depend on the order of writing.
type sizer struct {
	d    Dist
	seed uint64
	pcg  *rand.PCG
	r    *rand.Rand
}

func newSizer(o TreeOptions) *sizer {
	pcg := rand.NewPCG(0, 0)
	return &sizer{d: o.Size, seed: mix64(o.Seed ^ 0x7472656573697a65), pcg: pcg, r: rand.New(pcg)}
}

func (s *sizer) size(i int) int64 {
	if s.d.kind == distFixed {
		return s.d.min
	}
	s.pcg.Seed(s.seed, mix64(uint64(i)))
	return s.d.Sample(s.r)
}

// fileSeed is the seed of file i's content.
func fileSeed(seed uint64, i int) uint64 {
	return mix64(mix64(seed^0x74726565636f6e74) + uint64(i))
}

type treeWriter struct {
	ctx   context.Context
	dir   string
	opts  TreeOptions
	lay   layout
	regen bool
	write func(fd int, b []byte) (int, error)

	nextLeaf atomic.Int64
	done     atomic.Int64 // files written completely
	bytes    atomic.Int64
	stop     atomic.Bool

	errOnce sync.Once
	err     error
}

// stopped reports whether the run must stop: an error or ctx.
func (t *treeWriter) stopped() bool { return t.stop.Load() || t.ctx.Err() != nil }

func (t *treeWriter) fail(err error) {
	t.errOnce.Do(func() { t.err = err })
	t.stop.Store(true)
}

func (t *treeWriter) run() (TreeStats, error) {
	progress := t.opts.Progress
	if progress == nil {
		progress = func(int, int) {}
	}
	n := t.opts.Files
	// A panic in progress (the caller's function, called here while the
	// workers write) goes on only once they have stopped: no goroutine
	// of Tree's outlives the call, and no file is left half written.
	var finished chan struct{}
	defer func() {
		if r := recover(); r != nil {
			t.stop.Store(true)
			if finished != nil {
				<-finished
			}
			panic(r)
		}
	}()
	progress(0, n)

	if err := t.mkdirs(); err != nil {
		t.fail(err)
	} else {
		workers := min(2, runtime.GOMAXPROCS(0), t.lay.leaves())
		var wg sync.WaitGroup
		for range workers {
			wg.Go(t.worker)
		}
		finished = make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		tick := time.NewTicker(progressEvery)
	wait:
		for {
			select {
			case <-finished:
				break wait
			case <-tick.C:
				progress(int(t.done.Load()), n)
			}
		}
		tick.Stop()
	}
	stats := TreeStats{Files: int(t.done.Load()), Bytes: t.bytes.Load(), Regenerated: t.regen}
	progress(stats.Files, n)
	err := t.err
	if err == nil && stats.Files != n {
		if err = t.ctx.Err(); err == nil {
			err = errors.New("internal error: not every file was written")
		}
	}
	if err != nil {
		return stats, &fs.PathError{Op: "gen", Path: t.dir, Err: fmt.Errorf(
			"%w (wrote %d of %d files, %s; no partial file left; the same command again rewrites the tree)",
			err, stats.Files, n, units.RoughSize(stats.Bytes))}
	}
	return stats, nil
}

// mkdirs creates the tree's directories, parents first, each once. An
// existing directory (regenerating) is kept; anything else in the way is
// an error.
func (t *treeWriter) mkdirs() error {
	l := t.lay
	if l.depth == 0 {
		return nil
	}
	var prev []byte
	buf := make([]byte, 0, 64)
	for leaf := range l.leaves() {
		// Often: a mkdir can take a millisecond on a busy disk, and a
		// Ctrl-C must stop the command within a second.
		if leaf%32 == 0 && t.stopped() {
			return context.Cause(t.ctx)
		}
		buf = l.dirPath(buf[:0], leaf*l.fan)
		// Create each level of buf that differs from prev.
		for end := 0; end < len(buf); {
			next := end + l.dirW
			if end > 0 {
				next++
			}
			end = next
			if len(prev) >= end && string(prev[:end]) == string(buf[:end]) {
				continue
			}
			p := filepath.Join(t.dir, string(buf[:end]))
			if err := sys.Mkdir(p, 0o755); err != nil {
				if err != sys.EEXIST {
					return &fs.PathError{Op: "mkdir", Path: p, Err: err}
				}
				var st sys.Stat_t
				if err := sys.Lstat(p, &st); err != nil {
					return &fs.PathError{Op: "lstat", Path: p, Err: err}
				}
				if st.Mode&sys.S_IFMT != sys.S_IFDIR {
					return &fs.PathError{Op: "mkdir", Path: p, Err: errors.New("exists and is not a directory")}
				}
			}
		}
		prev = append(prev[:0], buf...)
	}
	return nil
}

// worker writes the files of leaf directories until there are none left or
// the run stops.
func (t *treeWriter) worker() {
	l := t.lay
	bufLen := min(t.opts.Size.Max(), ChunkSize)
	buf := make([]byte, bufLen)
	sz := newSizer(t.opts)
	path := make([]byte, 0, len(t.dir)+64)
	for !t.stopped() {
		leaf := int(t.nextLeaf.Add(1) - 1)
		if leaf >= l.leaves() {
			return
		}
		first, end := l.leafFiles(leaf)
		path = append(path[:0], t.dir...)
		path = append(path, '/')
		path = l.dirPath(path, first)
		if l.depth > 0 {
			path = append(path, '/')
		}
		dirLen := len(path)
		for i := first; i < end; i++ {
			if t.stopped() {
				return
			}
			path = l.fileName(path[:dirLen], i)
			size := sz.size(i)
			if err := t.writeFile(string(path), size, fileSeed(t.opts.Seed, i), buf); err != nil {
				t.fail(err)
				return
			}
			t.bytes.Add(size)
			t.done.Add(1)
		}
	}
}

// writeFile creates path (never following a symbolic link, never
// truncating what is there), fills it with size bytes of the stream of
// seed, and closes it. On failure it removes the file it created.
func (t *treeWriter) writeFile(path string, size int64, seed uint64, buf []byte) error {
	const flags = sys.O_WRONLY | sys.O_CREAT | sys.O_EXCL | sys.O_NOFOLLOW
	fd, err := sys.Create(path, flags, 0o644)
	if err == sys.EEXIST && t.regen {
		// Our own file from before: replace it (unlink, so that a hard
		// link's other names and a symbolic link's target are untouched).
		if err := sys.Unlink(path); err != nil && err != sys.ENOENT {
			return &fs.PathError{Op: "unlink", Path: path, Err: err}
		}
		fd, err = sys.Create(path, flags, 0o644)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var werr error
	for k := int64(0); k*ChunkSize < size; k++ {
		if k > 0 && t.stopped() {
			werr = context.Cause(t.ctx)
			if werr == nil {
				werr = errors.New("stopped")
			}
			break
		}
		b := buf[:min(ChunkSize, size-k*ChunkSize)]
		fill(b, seed, uint64(k))
		if werr = t.writeAll(fd, b); werr != nil {
			werr = &fs.PathError{Op: "write", Path: path, Err: werr}
			break
		}
	}
	if err := sys.Close(fd); err != nil && werr == nil {
		werr = &fs.PathError{Op: "close", Path: path, Err: err}
	}
	if werr != nil {
		sys.Unlink(path)
	}
	return werr
}

func (t *treeWriter) writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := t.write(fd, b)
		if err == sys.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return sys.EIO
		}
		b = b[n:]
	}
	return nil
}
