package gen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/iopath/iopath/internal/outfile"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
)

// ChunkSize is the size of each write, and of each independently seeded
// stream of the generator. It is part of the content's definition: changing
// it changes the bytes a seed produces.
const ChunkSize = 1 << 20

// progressEvery is the least time between two calls of Options.Progress.
const progressEvery = 100 * time.Millisecond

// Options control File.
type Options struct {
	// Seed selects the content. The same seed and size always give the
	// same bytes.
	Seed uint64
	// Force allows File to replace an existing regular file.
	// Directories and other non-regular files are refused even so.
	Force bool
	// Sync makes File fsync the file before it takes the path.
	Sync bool
	// Progress, when set, is called on File's goroutine with the bytes
	// written so far and the total: once at the start, at most about ten
	// times a second while writing, and once with written == total at the
	// end.
	Progress func(written, total int64)
	// Temp, when set, is called with the path of the file being written
	// as soon as it exists (a temporary file beside the target, or
	// TempFile's file), and returns a function that forgets it. File
	// calls that function once the file is renamed into place or
	// removed; TempFile calls it only when it fails (the file is then the
	// caller's). A program that can be stopped at once removes the files
	// still remembered then.
	Temp func(path string) (forget func())

	// wrap, when set, wraps the writer of the file; tests inject faults
	// (ENOSPC) with it.
	wrap func(io.Writer) io.Writer
}

// File writes size bytes of pseudo-random data selected by opts.Seed to
// path. It refuses an existing path unless opts.Force, and refuses
// directories and non-regular files always. The data goes to a temporary
// file beside path, which takes path's place only when complete (over the
// existing file with Force, else only if path still does not exist), so
// that on any error — a failed write such as ENOSPC or EDQUOT, a failed
// fsync or close, ctx being cancelled — no partial file is left and an
// existing file is untouched. Both files exist until the rename, so File
// fails early when the filesystem clearly lacks the space for the whole
// new file. Errors are *fs.PathError with Op "gen", e.g.
//
//	gen /x/f: no space left on device (wrote 3.20GiB of 8GiB; partial file removed)
//
// and errors.Is works on their cause (fs.ErrExist, syscall.ENOSPC,
// context.Canceled).
func File(ctx context.Context, path string, size int64, opts Options) error {
	if size < 0 {
		return &fs.PathError{Op: "gen", Path: path, Err: fmt.Errorf("negative size %d", size)}
	}
	exists := false
	switch st, err := os.Stat(path); {
	case err == nil:
		if err := checkTarget(path, st); err != nil {
			return err
		}
		if !opts.Force {
			return &fs.PathError{Op: "gen", Path: path, Err: outfile.ErrExists}
		}
		exists = true
	case errors.Is(err, fs.ErrNotExist):
	default:
		return err
	}
	if err := checkSpace(path, filepath.Dir(path), size); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &fs.PathError{Op: "gen", Path: path, Err: err}
	}
	tmp, err := outfile.Create(path, opts.Temp)
	if err != nil {
		return &fs.PathError{Op: "gen", Path: path, Err: fmt.Errorf("a temporary file beside it: %w", unwrapPath(err))}
	}
	var w io.Writer = tmp.File
	if opts.Sync {
		w = &syncing{f: tmp.File}
	}
	if opts.wrap != nil {
		w = opts.wrap(w)
	}
	written, err := write(ctx, w, size, opts.Seed, opts.Progress)
	if err != nil {
		tmp.Abort()
	} else if err = tmp.Commit(opts.Force, opts.Sync); errors.Is(err, outfile.ErrExists) {
		// path appeared while the file was written: it stays.
		return &fs.PathError{Op: "gen", Path: path, Err: outfile.ErrExists}
	}
	if err == nil {
		return nil
	}
	left := "partial file removed"
	if exists {
		left += "; the existing file is untouched"
	}
	return &fs.PathError{Op: "gen", Path: path, Err: fmt.Errorf("%w (wrote %s of %s; %s)",
		unwrapPath(err), units.FormatSize(written), units.FormatSize(size), left)}
}

// unwrapPath returns the cause of a *fs.PathError (which names the
// temporary file, not the one the caller asked for), or err.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// TempFile creates a file named like iopath-bench-*.dat in dir (the
// system's temporary directory when dir is ""), writes size bytes to it as
// File does (opts.Seed, Sync, Progress and Temp apply; Force does not),
// and returns its path. The caller removes the file. On error no file is
// left behind.
func TempFile(ctx context.Context, dir string, size int64, opts Options) (string, error) {
	if size < 0 {
		return "", fmt.Errorf("gen temp file: negative size %d", size)
	}
	if dir == "" {
		dir = os.TempDir()
	}
	if err := checkSpace(dir, dir, size); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "iopath-bench-*.dat")
	if err != nil {
		return "", err
	}
	path := f.Name()
	forget := func() {}
	if opts.Temp != nil {
		forget = opts.Temp(path)
	}
	var w io.Writer = f
	if opts.Sync {
		w = &syncing{f: f}
	}
	if opts.wrap != nil {
		w = opts.wrap(w)
	}
	written, err := write(ctx, w, size, opts.Seed, opts.Progress)
	if err == nil && opts.Sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		forget()
		return "", &fs.PathError{Op: "gen", Path: path, Err: fmt.Errorf("%w (wrote %s of %s; partial file removed)",
			unwrapPath(err), units.FormatSize(written), units.FormatSize(size))}
	}
	return path, nil
}

// syncEvery is how many bytes a synced file (Options.Sync) is written
// between two fdatasyncs. One fsync of the whole file at the end cannot be
// interrupted and, on a busy disk, took longer than the second a command
// has to stop after Ctrl-C (tune's trial files, up to 64 MiB); synced in
// steps, the file leaves little for the last sync, and ctx is looked at
// between steps.
const syncEvery = 8 << 20

// syncing writes to f and fdatasyncs it every syncEvery bytes.
type syncing struct {
	f       *os.File
	pending int
}

func (s *syncing) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	if s.pending += n; err == nil && s.pending >= syncEvery {
		s.pending = 0
		err = sys.Fdatasync(int(s.f.Fd()))
	}
	return n, err
}

// checkTarget refuses what File must never write to.
func checkTarget(path string, st fs.FileInfo) error {
	switch {
	case st.IsDir():
		return &fs.PathError{Op: "gen", Path: path, Err: sys.EISDIR}
	case !st.Mode().IsRegular():
		return &fs.PathError{Op: "gen", Path: path, Err: fmt.Errorf("%w (%s)", sys.ErrNotRegular, st.Mode().Type())}
	}
	return nil
}

// freeSpace is the space available to this user on dir's filesystem; a
// variable so that tests can make a disk look full.
var freeSpace = func(dir string) (uint64, error) {
	_, avail, _, err := sys.Statfs(dir)
	return avail, err
}

// checkSpace fails when the filesystem holding dir has clearly less than
// need bytes available. When statfs fails the write goes ahead: the write
// itself will report what is wrong.
func checkSpace(path, dir string, need int64) error {
	if need <= 0 {
		return nil
	}
	avail, err := freeSpace(dir)
	if err != nil || uint64(need) <= avail {
		return nil
	}
	return &fs.PathError{Op: "gen", Path: path, Err: fmt.Errorf("%w: need %s, %s available in %s",
		sys.ENOSPC, units.RoughSize(need), units.RoughSize(int64(avail)), dir)}
}

// write writes size bytes of the stream selected by seed to w, in chunks of
// ChunkSize. Two goroutines generate chunks into a ring of buffers while the
// calling goroutine writes them in order; chunk k always goes through
// buffer k%nbuf, and a buffer passes between generator and writer through
// one-slot channels, so each buffer has one owner at a time.
func write(ctx context.Context, w io.Writer, size int64, seed uint64, progress func(written, total int64)) (written int64, err error) {
	if progress == nil {
		progress = func(int64, int64) {}
	}
	progress(0, size)
	if size == 0 {
		return 0, ctx.Err()
	}
	nchunks := (size + ChunkSize - 1) / ChunkSize
	ngen := min(2, nchunks)
	nbuf := 2 * ngen
	bufLen := min(size, ChunkSize)
	chunk := func(k int64) int64 { return min(ChunkSize, size-k*ChunkSize) }

	bufs := make([][]byte, nbuf)
	filled := make([]chan struct{}, nbuf)
	free := make([]chan struct{}, nbuf)
	for i := range bufs {
		bufs[i] = make([]byte, bufLen)
		filled[i] = make(chan struct{}, 1)
		free[i] = make(chan struct{}, 1)
		free[i] <- struct{}{}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range ngen {
		wg.Go(func() {
			for k := g; k < nchunks; k += ngen {
				s := k % nbuf
				select {
				case <-free[s]:
				case <-stop:
					return
				}
				fill(bufs[s][:chunk(k)], seed, uint64(k))
				filled[s] <- struct{}{}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	last := time.Now()
	for k := range nchunks {
		s := k % nbuf
		select {
		case <-filled[s]:
		case <-ctx.Done():
			return written, ctx.Err()
		}
		if err := ctx.Err(); err != nil {
			return written, err
		}
		b := bufs[s][:chunk(k)]
		n, err := w.Write(b)
		written += int64(n)
		if err == nil && n < len(b) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return written, err
		}
		free[s] <- struct{}{}
		if now := time.Now(); written == size || now.Sub(last) >= progressEvery {
			progress(written, size)
			last = now
		}
	}
	return written, nil
}

// wyrand's constants (Wang Yi's wyhash, public domain).
const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
)

// mix64 is splitmix64's finalizer: a bijection that spreads every input bit
// over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// fill writes chunk k of the stream selected by seed into b: wyrand output,
// eight bytes per step, little endian, from a state derived from (seed, k).
func fill(b []byte, seed, k uint64) {
	s := mix64(mix64(seed) ^ k)
	i := 0
	for ; i+32 <= len(b); i += 32 {
		q := b[i : i+32 : i+32]
		s += wyp0
		hi, lo := bits.Mul64(s, s^wyp1)
		binary.LittleEndian.PutUint64(q[0:], hi^lo)
		s += wyp0
		hi, lo = bits.Mul64(s, s^wyp1)
		binary.LittleEndian.PutUint64(q[8:], hi^lo)
		s += wyp0
		hi, lo = bits.Mul64(s, s^wyp1)
		binary.LittleEndian.PutUint64(q[16:], hi^lo)
		s += wyp0
		hi, lo = bits.Mul64(s, s^wyp1)
		binary.LittleEndian.PutUint64(q[24:], hi^lo)
	}
	for ; i < len(b); i += 8 {
		s += wyp0
		hi, lo := bits.Mul64(s, s^wyp1)
		var t [8]byte
		binary.LittleEndian.PutUint64(t[:], hi^lo)
		copy(b[i:], t[:])
	}
}
