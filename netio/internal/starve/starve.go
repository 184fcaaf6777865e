// Package starve runs a test's process out of file descriptors, for the
// tests of what servers do when accept(2) fails with EMFILE (netio's
// engines, netio/filesrv). RLIMIT_NOFILE is per process: a test that uses
// it must not run in parallel with others.
package starve

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Starver holds a lowered RLIMIT_NOFILE and the descriptors that fill it.
type Starver struct {
	t       testing.TB
	rl      sys.Rlimit
	fillers []int
}

// LowerNofile lowers the soft RLIMIT_NOFILE to 16 above the highest fd
// open now. Restore (also run at cleanup) puts it back.
func LowerNofile(t testing.TB) *Starver {
	t.Helper()
	f := &Starver{t: t}
	if err := sys.Getrlimit(sys.RLIMIT_NOFILE, &f.rl); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	top := 0
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			top = max(top, fd)
		}
	}
	low := f.rl
	low.Cur = uint64(top + 16)
	if err := sys.Setrlimit(sys.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Restore)
	return f
}

// FillAllBut takes every descriptor under the lowered limit, then gives n
// back: the process can open n more, and then gets EMFILE.
//
// A descriptor can be free for a moment only: accept(2) and an io_uring
// ACCEPT reserve an fd number before they look for a connection, and
// give it back when there is none, so a server's accept that runs while
// the fill does hides one number from it, which the server then finds
// free. The fill therefore goes on taking what comes free until none
// has for settle (20 ms).
func (f *Starver) FillAllBut(n int) {
	f.t.Helper()
	const settle = 20 * time.Millisecond
	quiet := time.Now()
	for time.Since(quiet) < settle {
		fd, err := sys.Open("/dev/null", sys.O_RDONLY)
		if err != nil {
			if e, _ := sys.Errno(err); e != sys.EMFILE {
				f.t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		f.fillers = append(f.fillers, fd)
		quiet = time.Now()
	}
	if len(f.fillers) < n {
		f.t.Fatalf("only %d descriptors were free under the lowered limit, want %d", len(f.fillers), n)
	}
	for _, fd := range f.fillers[len(f.fillers)-n:] {
		sys.Close(fd)
	}
	f.fillers = f.fillers[:len(f.fillers)-n]
}

// FillAllButOne is FillAllBut(1): one descriptor for a client's socket,
// none for the server's accept of it.
func (f *Starver) FillAllButOne() { f.FillAllBut(1) }

// Restore closes what FillAllBut took and puts the limit back.
func (f *Starver) Restore() {
	for _, fd := range f.fillers {
		sys.Close(fd)
	}
	f.fillers = nil
	sys.Setrlimit(sys.RLIMIT_NOFILE, &f.rl)
}
