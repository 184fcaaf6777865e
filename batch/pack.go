package batch

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/klauspost/compress/zstd"
)

// Level is a zstd compression level for Pack.
type Level int

// The zstd levels Pack offers: klauspost/compress's SpeedFastest (about
// zstd -1), SpeedDefault (about zstd -3) and SpeedBetterCompression (about
// zstd -7).
const (
	LevelDefault Level = iota
	LevelFastest
	LevelBetter
)

var levelNames = map[Level]string{LevelDefault: "default", LevelFastest: "fastest", LevelBetter: "better"}

func (l Level) String() string {
	if s, ok := levelNames[l]; ok {
		return s
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ParseLevel parses "fastest", "default" or "better".
func ParseLevel(s string) (Level, error) {
	for l, name := range levelNames {
		if s == name {
			return l, nil
		}
	}
	return 0, fmt.Errorf("level %q: want fastest, default or better", s)
}

func (l Level) zstd() zstd.EncoderLevel {
	switch l {
	case LevelFastest:
		return zstd.SpeedFastest
	case LevelBetter:
		return zstd.SpeedBetterCompression
	}
	return zstd.SpeedDefault
}

// PackOptions say how Pack writes.
type PackOptions struct {
	// Zstd compresses the tar stream with zstd (one frame), at Level.
	Zstd  bool
	Level Level
	// Progress, if set, is called after each file packed with the counts
	// so far.
	Progress func(files, bytes int64)
}

// PackStats is what Pack did.
type PackStats struct {
	Files    int64 // regular files packed
	Bytes    int64 // their bytes
	Symlinks int64 // symlinks skipped
	Special  int64 // other non-regular files skipped (devices, FIFOs, sockets)
	Written  int64 // bytes of archive written to w
}

// Skipped describes the skipped entries for people ("3 symlinks, 1 special
// file"), or "" when none were.
func (s PackStats) Skipped() string {
	var parts []string
	if s.Symlinks > 0 {
		parts = append(parts, plural(s.Symlinks, "symlink"))
	}
	if s.Special > 0 {
		parts = append(parts, plural(s.Special, "special file"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// packBufferSize is the copy buffer for file contents and the write buffer
// in front of w: large enough that a big file costs few syscalls, small
// enough not to matter.
const packBufferSize = 1 << 20

// Pack writes the regular files under dir to w as a tar stream (zstd
// compressed with opts.Zstd), for the archive engine to read back.
//
// The tree is walked like Read walks a directory: filepath.WalkDir, entries
// in lexical order. Each regular file is stored under its path relative to
// dir, slash-separated, with its permission bits, size and modification
// time (to the second; no owner), in USTAR format, or PAX where a name is
// too long or not ASCII. Directories get no entries of their own (empty
// directories are not kept). Symlinks are not followed and, with devices,
// FIFOs and sockets, are skipped and counted in the stats; dir itself may
// be a symlink to a directory.
//
// Pack stops at the first error — an unreadable directory or file, a file
// that shrinks while it is packed, a write error, ctx's cancellation — and
// returns it naming the path; w then holds a partial archive. A file that
// grows while packed is stored with the size it had when opened. When w is
// an *os.File inside dir, Pack refuses to pack it into itself.
func Pack(ctx context.Context, dir string, w io.Writer, opts PackOptions) (PackStats, error) {
	var st PackStats
	root, err := packRoot(dir)
	if err != nil {
		return st, err
	}
	var self os.FileInfo // the archive being written, if it is a file
	if f, ok := w.(*os.File); ok {
		self, _ = f.Stat()
	}

	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, packBufferSize)
	var out io.Writer = bw
	var enc *zstd.Encoder
	if opts.Zstd {
		enc, err = zstd.NewWriter(bw, zstd.WithEncoderLevel(opts.Level.zstd()))
		if err != nil {
			return st, err
		}
		defer enc.Close() // frees its goroutines on an early return
		out = enc
	}
	tw := tar.NewWriter(out)
	buf := make([]byte, packBufferSize)
	done := ctx.Done()

	walkErr := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err // already a *fs.PathError naming the path
		}
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			st.Symlinks++
			return nil
		case !t.IsRegular():
			st.Special++
			return nil
		}
		name, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		n, err := packFile(tw, path, filepath.ToSlash(name), buf, self)
		if err != nil {
			return err
		}
		st.Files++
		st.Bytes += n
		if opts.Progress != nil {
			opts.Progress(st.Files, st.Bytes)
		}
		return nil
	})
	if walkErr != nil {
		if enc != nil {
			// The encoder writes its blocks from goroutines of its
			// own: Reset waits for those in flight, so that cw.n is
			// read after the last write, and drops the rest.
			enc.Reset(io.Discard)
		}
		st.Written = cw.n
		return st, walkErr
	}
	err = tw.Close()
	if err == nil && enc != nil {
		err = enc.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	st.Written = cw.n
	if err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	return st, nil
}

// packRoot checks dir and returns the path to walk: dir, or where it
// points when it is a symlink to a directory (WalkDir would not enter it).
func packRoot(dir string) (string, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return "", err
		}
		if fi, err = os.Stat(dir); err != nil {
			return "", err
		}
	}
	if !fi.IsDir() {
		return "", &fs.PathError{Op: "pack", Path: dir, Err: syscall.ENOTDIR}
	}
	return dir, nil
}

// packFile writes one file's header and bytes. Errors name path.
func packFile(tw *tar.Writer, path, name string, buf []byte, self os.FileInfo) (int64, error) {
	// O_NOFOLLOW: the walk saw a regular file; if a symlink has taken its
	// place since, fail rather than pack what it points to.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, &fs.PathError{Op: "pack", Path: path, Err: errors.New("no longer a regular file")}
	}
	if self != nil && os.SameFile(fi, self) {
		return 0, &fs.PathError{Op: "pack", Path: path, Err: errors.New("is the archive being written; it would pack itself")}
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     int64(fi.Mode().Perm()),
		Size:     fi.Size(),
		ModTime:  fi.ModTime(),
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	// LimitReader hides f's WriterTo, so the copy goes through buf.
	n, err := io.CopyBuffer(tw, io.LimitReader(f, hdr.Size), buf)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return n, err
		}
		return n, fmt.Errorf("%s: %w", path, err)
	}
	if n < hdr.Size {
		return n, &fs.PathError{Op: "pack", Path: path, Err: fmt.Errorf("shrank from %d to %d bytes while packed", hdr.Size, n)}
	}
	return n, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
