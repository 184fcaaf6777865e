package auto

import (
	"slices"
	"strings"

	"github.com/iopath/iopath/internal/sys"
)

// Bounds of Decide's sample of many files. They bound its cost whatever
// the number of files: at most maxSampleFiles files probed (open, fstat,
// mmap, mincore, munmap, close each) and at most sampleDirs directories
// read with one getdents64 call each into a direntBuf-byte buffer.
const (
	maxSampleFiles = 32
	sampleDirs     = 16
	// filesPerDir is the most files taken from one directory, so that the
	// sample spreads over several.
	filesPerDir = 8
	// maxWalks bounds the descents from the roots (each is cheap once its
	// directories are listed).
	maxWalks = 4 * sampleDirs
	// maxDepth is the deepest a descent goes below its root.
	maxDepth  = 16
	direntBuf = 32 << 10
)

// sample is what sampleFiles measured.
type sample struct {
	files      int     // files measured
	medianSize int64   // their median size; 0 when files == 0
	resident   float64 // their mean residency; -1 when files == 0
	dirReads   int     // directories read
}

// listing is what one getdents64 call returned for a directory.
type listing struct {
	subdirs []string // full paths
}

type sampler struct {
	sizes    []int64
	resident float64
	dirReads int
	roots    []string            // directories given (or found among the paths)
	listed   map[string]*listing // directories read so far
	buf      []byte
}

// sampleFiles measures up to maxSampleFiles files among paths, spread
// evenly over the list. Directories among them are sampled by descents:
// each descent starts at one of them and goes down one subdirectory at a
// time, picked by a low-discrepancy sequence so that successive descents
// take different branches, to a directory without subdirectories. A
// directory is read once (one getdents64 call: its first entries only)
// and up to filesPerDir of its files, spread over what that call
// returned, are measured. It stops at maxSampleFiles files or sampleDirs
// directory reads, so its cost does not grow with the tree. Errors make a
// path count as unknown: nothing is reported, the engine will.
func sampleFiles(paths []string) sample {
	s := &sampler{listed: map[string]*listing{}}
	n := len(paths)
	k := min(n, maxSampleFiles)
	for i := range k {
		s.probe(paths[i*n/k])
	}
	for walk := 0; walk < maxWalks && len(s.roots) > 0 && !s.done(); walk++ {
		s.descend(s.roots[walk%len(s.roots)], walk)
	}
	out := sample{files: len(s.sizes), resident: -1, dirReads: s.dirReads}
	if out.files > 0 {
		slices.Sort(s.sizes)
		out.medianSize = s.sizes[len(s.sizes)/2]
		out.resident = s.resident / float64(out.files)
	}
	return out
}

func (s *sampler) done() bool {
	return len(s.sizes) >= maxSampleFiles || s.dirReads >= sampleDirs
}

// descend goes from dir down to a leaf, reading the directories it has not
// read yet.
func (s *sampler) descend(dir string, walk int) {
	for depth := 0; depth < maxDepth && !s.done(); depth++ {
		l := s.listed[dir]
		if l == nil {
			l = s.readDir(dir)
			s.listed[dir] = l
		}
		if len(l.subdirs) == 0 {
			return
		}
		// The fractional part of (walk+depth)·φ: spread over [0,1).
		const phi = 0.6180339887498949
		x := float64(walk+depth*7) * phi
		x -= float64(int(x))
		dir = l.subdirs[int(x*float64(len(l.subdirs)))]
	}
}

// probe measures path if it is a regular file, and takes it as a root if
// it is a directory.
func (s *sampler) probe(path string) {
	if len(s.sizes) >= maxSampleFiles {
		return
	}
	fd, err := sys.Open(path, sys.O_RDONLY|sys.O_NONBLOCK)
	if err != nil {
		return
	}
	defer sys.Close(fd)
	var st sys.Stat_t
	if sys.Fstat(fd, &st) != nil {
		return
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
		r, err := residentFD(fd, st.Size)
		if err != nil {
			return
		}
		s.sizes = append(s.sizes, st.Size)
		s.resident += r
	case sys.S_IFDIR:
		s.roots = append(s.roots, path)
	}
}

// readDir reads dir's first entries, measures a spread of its files and
// returns its subdirectories.
func (s *sampler) readDir(dir string) *listing {
	s.dirReads++
	l := &listing{}
	fd, err := sys.Open(dir, sys.O_RDONLY|sys.O_DIRECTORY)
	if err != nil {
		return l
	}
	if s.buf == nil {
		s.buf = make([]byte, direntBuf)
	}
	n, err := sys.Getdents(fd, s.buf)
	sys.Close(fd)
	if err != nil || n <= 0 {
		return l
	}
	join := func(name string) string {
		if strings.HasSuffix(dir, "/") {
			return dir + name
		}
		return dir + "/" + name
	}
	var files []string
	sys.Dirents(s.buf[:n], func(name []byte, typ uint8) {
		switch typ {
		case sys.DT_REG, sys.DT_UNKNOWN:
			// DT_UNKNOWN: the filesystem did not say; probe's fstat will
			// (a directory found so becomes a root of its own).
			files = append(files, string(name))
		case sys.DT_DIR:
			l.subdirs = append(l.subdirs, join(string(name)))
		}
	})
	for _, name := range spread(files, filesPerDir) {
		s.probe(join(name))
	}
	return l
}

// spread returns up to k of names, evenly spaced.
func spread(names []string, k int) []string {
	n := len(names)
	if n <= k {
		return names
	}
	out := make([]string, k)
	for i := range k {
		out[i] = names[i*n/k]
	}
	return out
}
