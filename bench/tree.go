package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// Tree mode: `iopath bench --tree DIR` reads every file of a tree through
// each batch engine (package batch), warm and cold, each run in a child
// process as for one file, and reports files per second, per-file latency,
// syscalls, CPU and context switches per file.

// TreeConfig is a many-files benchmark.
type TreeConfig struct {
	Dir     string   // the tree (walked)
	Archive string   // a pack of Dir for the archive engine ("" leaves archive out)
	Engines []string // batch engine names, in table order
	Caches  []Cache  // warm, cold
	Runs    int
	// Workers are swept for the engines that take a worker count (raw,
	// io_uring); readfile and archive run with one, pool with PoolWorkers.
	Workers     []int
	PoolWorkers int
	Depth       int // io_uring files in flight per worker
	MinTime     time.Duration
	NoLatency   bool

	// ProfileDir, PerfDir, TraceDir, ProfileReplace, TrackTemp and
	// TrackTempDir are Config's: per-run profiles, perf recordings and
	// execution traces.
	ProfileDir, PerfDir, TraceDir string
	ProfileReplace                bool
	PerfFreq                      int
	TrackTemp                     func(path string) (forget func())
	TrackTempDir                  func(dir string) (forget func())

	Command, Version string
	TempDir          bool // Dir was generated for this run
	ChildCommand     []string
	Progress         func(done, total int, what string)
}

func (c *TreeConfig) outputs() *outputs {
	return &outputs{profileDir: c.ProfileDir, perfDir: c.PerfDir, traceDir: c.TraceDir, replace: c.ProfileReplace,
		track: c.TrackTemp, trackDir: c.TrackTempDir, perfFreq: c.PerfFreq}
}

// DefaultTreeEngines are the batch engines compared by default.
func DefaultTreeEngines() []string { return batch.Names() }

// DefaultPoolWorkers is the pool engine's goroutine count.
const DefaultPoolWorkers = 128

func (c *TreeConfig) setDefaults() {
	if len(c.Engines) == 0 {
		c.Engines = DefaultTreeEngines()
	}
	if len(c.Caches) == 0 {
		c.Caches = []Cache{Warm, Cold}
	}
	if c.Runs == 0 {
		c.Runs = 3
	}
	if len(c.Workers) == 0 {
		c.Workers = []int{1}
	}
	if c.PoolWorkers == 0 {
		c.PoolWorkers = DefaultPoolWorkers
	}
}

// Validate checks the configuration before anything runs.
func (c *TreeConfig) Validate() error {
	c.setDefaults()
	if c.Runs < 1 || c.Runs > MaxRuns {
		return fmt.Errorf("runs %d out of range [1, %d]", c.Runs, MaxRuns)
	}
	if c.MinTime < 0 || c.MinTime > time.Hour {
		return fmt.Errorf("min time %v out of range [0, 1h]", c.MinTime)
	}
	seen := map[string]bool{}
	for _, n := range c.Engines {
		if _, err := batch.Lookup(n); err != nil {
			return err
		}
		if seen[n] {
			return fmt.Errorf("engine %q named twice", n)
		}
		seen[n] = true
	}
	for _, w := range c.Workers {
		if w < 1 || w > batch.MaxWorkers {
			return fmt.Errorf("workers %d out of range [1, %d]", w, batch.MaxWorkers)
		}
	}
	if w := c.PoolWorkers; w < 1 || w > batch.MaxWorkers {
		return fmt.Errorf("pool workers %d out of range [1, %d]", w, batch.MaxWorkers)
	}
	if c.Depth < 0 || c.Depth > batch.MaxDepth {
		return fmt.Errorf("depth %d out of range [0, %d]", c.Depth, batch.MaxDepth)
	}
	for _, cs := range c.Caches {
		if cs != Warm && cs != Cold {
			return fmt.Errorf("cache state %q: the tree benchmark has warm and cold", cs)
		}
	}
	return nil
}

// TreeInfo describes the tree that was read.
type TreeInfo struct {
	Dir       string `json:"dir"`
	Files     int64  `json:"files"`
	Bytes     int64  `json:"bytes"`
	Temporary bool   `json:"temporary"`
	Archive   string `json:"archive,omitempty"`
}

// treeFiles lists the regular files under dir (what the engines will
// deliver with data) and their total size; gen's marker is not one of
// them (see treePaths).
func treeFiles(dir string) ([]string, int64, error) {
	var files []string
	var bytes int64
	marker := genMarker(dir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && p != marker {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, p)
			bytes += info.Size()
		}
		return nil
	})
	return files, bytes, err
}

// genMarker is the path of the marker gen --tree left at dir's root, or ""
// when dir holds none (a file of that name that is not gen's is the
// user's, and is read like any other).
func genMarker(dir string) string {
	p := filepath.Join(dir, gen.TreeMarker)
	if gen.IsTreeMarker(p) {
		return p
	}
	return ""
}

// treePaths is what the engines are given to read the tree at dir: dir
// itself, which they walk; or, when gen made the tree, the entries of its
// root but gen's marker (in the walk's order), which records how the tree
// was made and is not one of its files.
func treePaths(dir string) ([]string, error) {
	if genMarker(dir) == "" {
		return []string{dir}, nil
	}
	ents, err := os.ReadDir(dir) // sorted by name, as the walk goes
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range ents {
		if e.Name() != gen.TreeMarker {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths, nil
}

// treeSum is the checksum of a tree's contents, independent of the order
// files are delivered in: the sum of each file's xxh3 seeded with the
// hash of its path relative to the tree.
type treeSum struct {
	root   string
	prefix string // the cleaned root and a separator
	sum    atomic.Uint64
}

func newTreeSum(root string) *treeSum {
	t := &treeSum{root: root}
	if root != "" {
		t.prefix = filepath.Clean(root) + string(filepath.Separator)
	}
	return t
}

func (t *treeSum) add(path string, data []byte) {
	rel := path
	if t.root != "" {
		// The walk joins clean names to the cleaned root, so the prefix
		// is the common case; filepath.Rel (about 120 ns a file) is kept
		// for the rest.
		if strings.HasPrefix(path, t.prefix) {
			rel = path[len(t.prefix):]
		} else if r, err := filepath.Rel(t.root, path); err == nil {
			rel = filepath.ToSlash(r)
		}
	}
	t.sum.Add(xxh3.HashSeed(data, xxh3.HashString(rel)))
}

// dropTree asks the kernel to drop the cached pages of every file (and the
// archive): cold runs then read data from disk while the directories and
// inodes stay cached ("metadata cached, data not").
func dropTree(files []string, archive string) error {
	// Dirty pages cannot be dropped: write back the whole filesystem once
	// (a tree just generated is still dirty) rather than fsync every file.
	if len(files) > 0 {
		fd, err := sys.Open(files[0], sys.O_RDONLY)
		if err == nil {
			err = sys.Syncfs(fd)
			sys.Close(fd)
			if err != nil {
				return &fs.PathError{Op: "syncfs", Path: files[0], Err: err}
			}
		}
	}
	if archive != "" {
		if err := drop(archive); err != nil {
			return err
		}
	}
	for _, p := range files {
		fd, err := sys.Open(p, sys.O_RDONLY)
		if err != nil {
			continue // vanished: the run will say so
		}
		err = sys.Fadvise(fd, 0, 0, sys.FADV_DONTNEED)
		sys.Close(fd)
		if err != nil {
			return &fs.PathError{Op: "fadvise", Path: p, Err: err}
		}
	}
	return nil
}

// warmTree reads every file (and the archive) once.
func warmTree(files []string, archive string) error {
	if archive != "" {
		if err := warm(archive); err != nil {
			return err
		}
	}
	for _, p := range files {
		if err := warm(p); err != nil {
			return err
		}
	}
	return nil
}

// treeResidency samples up to 2,000 of the files and returns the fraction
// of their pages cached.
func treeResidency(files []string) float64 {
	step := max(1, len(files)/2000)
	var sum float64
	n := 0
	for i := 0; i < len(files); i += step {
		r, err := residency(files[i])
		if err != nil {
			continue
		}
		sum += r
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// treeRequest is a child's job in tree mode.
type treeRequest struct {
	Engine    string    `json:"engine"`
	Job       batch.Job `json:"job"`
	Root      string    `json:"root"`
	MinTimeNs int64     `json:"min_time_ns"`
}

// measureTree is the child's side of one tree run.
func measureTree(ctx context.Context, creq *childRequest, resp *childResponse) *childResponse {
	req := creq.Tree
	fail := func(err error) *childResponse {
		resp.Error = err.Error()
		resp.NotSupported = isNotSupported(err)
		return resp
	}
	e, err := batch.Lookup(req.Engine)
	if err != nil {
		return fail(err)
	}
	metrics.InitClock()
	sum := newTreeSum(req.Root)
	var firstErr atomic.Value
	// An archive of a tree gen made holds gen's marker at its root: it is
	// not one of the tree's files (treePaths leaves it out of the others'
	// reads), so it is not counted.
	var markers, markerBytes atomic.Int64
	fn := func(f *batch.File) error {
		if f.Err != nil {
			firstErr.CompareAndSwap(nil, f.Err.Error())
			return nil
		}
		if req.Job.Archive != "" && f.Path == gen.TreeMarker && gen.IsTreeMarkerData(f.Data) {
			markers.Add(1)
			markerBytes.Add(int64(len(f.Data)))
			return nil
		}
		sum.add(f.Path, f.Data)
		return nil
	}
	inst, err := startInstruments(creq)
	if err != nil {
		return fail(err)
	}
	defer inst.stop()
	err = measurePasses(resp, time.Duration(req.MinTimeNs), true, "tree", func() (pass, error) {
		st, err := batch.Read(ctx, e, req.Job, fn)
		if err != nil {
			return pass{}, err
		}
		return pass{bytes: st.Bytes - markerBytes.Swap(0), items: st.Files - markers.Swap(0), errors: st.Errors,
			syscalls: st.Syscalls, lat: st.Lat, notes: st.Notes, sum: sum.sum.Swap(0)}, nil
	})
	if err != nil {
		return fail(err)
	}
	if err := inst.finish(resp); err != nil {
		return fail(err)
	}
	if e, ok := firstErr.Load().(string); ok {
		resp.Notes = append(resp.Notes, fmt.Sprintf("%d files could not be read, e.g. %s", resp.Errors/int64(max(resp.Passes, 1)), e))
	}
	return resp
}

// treeReference reads the tree once in this process with the readfile
// engine (paths as treePaths gives them) and returns its checksum.
func treeReference(ctx context.Context, dir string, paths []string) (string, error) {
	e, err := batch.Lookup("readfile")
	if err != nil {
		return "", err
	}
	sum := newTreeSum(dir)
	_, err = batch.Read(ctx, e, batch.Job{Paths: paths}, func(f *batch.File) error {
		if f.Err == nil {
			sum.add(f.Path, f.Data)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return formatSum(sum.sum.Load()), nil
}

var _ = os.Getpid
