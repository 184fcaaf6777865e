package batch

import (
	"context"
	"os"
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
// Those calls are the os package's, not this engine's call sites, so
// Stats.Syscalls stays 0 for readfile and pool (a note says so).
//
// A FIFO given as a path blocks os.ReadFile until a writer opens it, as it
// would any Go program; the walk never hands one over (ErrNotRegular).
func init() { Register(readfileEngine{}) }

type readfileEngine struct{}

func (readfileEngine) Name() string { return "readfile" }

func (readfileEngine) Run(ctx context.Context, job Job, fn Func) (*Stats, error) {
	st, err := runReaders(ctx, "readfile", &job, 1, func() pathReader { return osReader{} }, fn)
	st.Notes = append(st.Notes, osReadFileNote)
	return st, err
}

const osReadFileNote = "syscalls not counted: os.ReadFile makes its own (10 for a small file on Go 1.26: openat, 4 fcntl, epoll_ctl, fstat, 2 read, close)"

// osReader reads with os.ReadFile: a fresh slice per file, errors already
// *fs.PathError naming the path.
type osReader struct{}

func (osReader) read(path string) ([]byte, error) { return os.ReadFile(path) }
func (osReader) syscalls() int64                  { return 0 }
func (osReader) release()                         {}
