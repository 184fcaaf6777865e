package batch

import (
	"context"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// The readfile engine: os.ReadFile on each path in turn, in the caller's
// goroutine — the baseline every other engine is measured against.
// Job.Workers is ignored.
//
// os.ReadFile on Go 1.26 makes 10 system calls for a file smaller than its
// first read (strace): openat; fcntl F_GETFL and F_SETFL to set O_NONBLOCK
// and epoll_ctl, which fails with EPERM for a regular file, so the poller
// gives up on it; fcntl F_GETFL and F_SETFL to clear O_NONBLOCK again;
// fstat for the size; read of size+1 bytes; read returning 0 (EOF); close.
// This engine opens with O_NONBLOCK itself (below), which saves the four
// fcntl calls: 6 system calls, so the baseline is a little faster than
// os.ReadFile, never slower. The calls are the os package's; Stats.Syscalls
// counts them at this engine's calls into os, each for the system calls
// os makes for it on a regular file (checked with strace -f): OpenFile 2
// (openat, and epoll_ctl, which fails with EPERM), Stat 1, each Read 1,
// Close 1.
//
// One change from os.ReadFile, so that nothing blocks: the file is opened
// with O_NONBLOCK and the fstat os.ReadFile makes anyway decides — a FIFO,
// socket or device named directly in Job.Paths is an ErrNotRegular error
// (opening a FIFO without O_NONBLOCK waits for a writer; /dev/zero never
// ends), a directory an EISDIR read error, as os.ReadFile's. For a regular
// file the steps are os.ReadFile's: open, fstat for the size, reads into a
// buffer of size+1 (at least 512) bytes until EOF, close. The walk never
// hands over non-regular files at all. A file whose size is not known in
// advance (fstat says 0, or it is on a pseudo-filesystem) is read to EOF
// as os.ReadFile reads it, but past Job.PseudoLimit bytes it is an error
// wrapping ErrLimit (os.ReadFile("/proc/self/pagemap") reads until memory
// runs out).
func init() { Register(readfileEngine{}) }

type readfileEngine struct{}

func (readfileEngine) Name() string { return "readfile" }

func (readfileEngine) Run(ctx context.Context, job Job, fn Func) (*Stats, error) {
	st, err := runReaders(ctx, "readfile", &job, 1, func() pathReader { return &osReader{limit: job.pseudoLimit()} }, fn)
	st.Notes = append(st.Notes, osReadFileNote)
	return st, err
}

const osReadFileNote = "syscalls counted at the engine's calls into os (6 for a small file on Go 1.26: openat, epoll_ctl, fstat, 2 read, close); os.ReadFile itself adds 4 fcntl"

// osReader reads as os.ReadFile does (see above): a fresh slice per file,
// errors *fs.PathError naming the path. n counts system calls (see above).
// A file whose size is not known (on a pseudo-filesystem, or of size 0)
// is, as in os.ReadFile, read until a read returns 0, but past limit bytes
// it is an ErrLimit error rather than a read that only the end of memory
// stops (/proc/self/pagemap).
type osReader struct {
	n     int64
	limit int
}

func (r *osReader) read(path string, unsized bool) ([]byte, error) {
	r.n++ // openat
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	r.n += 2 // epoll_ctl, close
	defer f.Close()
	r.n++ // fstat
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		return nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	case !fi.Mode().IsRegular():
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	// os.ReadFile's loop, bounded for a file of unknown size.
	unsized = unsized || fi.Size() == 0
	size := 512
	if s := fi.Size() + 1; s > int64(size) && s < 1<<40 {
		size = int(s)
	}
	data := make([]byte, 0, size)
	for {
		r.n++
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if unsized && len(data) > r.limit {
			return nil, limitErr(path, r.limit)
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return data, err
		}
		if len(data) >= cap(data) {
			if unsized {
				// Doubled, not grown by append's smaller steps
				// for large slices: fewer reads and copies on the
				// way to the limit, and below twice the limit.
				d := make([]byte, len(data), 2*cap(data))
				copy(d, data)
				data = d
				continue
			}
			d := append(data[:cap(data)], 0)
			data = d[:len(data)]
		}
	}
}
func (r *osReader) syscalls() int64 { return r.n }
func (r *osReader) release()        {}
