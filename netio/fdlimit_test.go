package netio

import (
	"os"
	"strconv"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

// FdStarver runs a process out of descriptors for the accept back-off
// tests of every engine (exported for package netio_test).
type FdStarver struct {
	t       testing.TB
	rl      sys.Rlimit
	fillers []int
}

// LowerNofile lowers the soft RLIMIT_NOFILE to 16 above the highest fd
// open now. Restore (also run at cleanup) puts it back.
func LowerNofile(t testing.TB) *FdStarver {
	t.Helper()
	f := &FdStarver{t: t}
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

// FillAllButOne takes every descriptor under the lowered limit, then gives
// one back for a client's socket: a server's next accept has none left.
func (f *FdStarver) FillAllButOne() {
	f.t.Helper()
	for {
		fd, err := sys.Open("/dev/null", sys.O_RDONLY)
		if err != nil {
			if e, _ := sys.Errno(err); e != sys.EMFILE {
				f.t.Fatal(err)
			}
			break
		}
		f.fillers = append(f.fillers, fd)
	}
	if len(f.fillers) == 0 {
		f.t.Fatal("no descriptor was free under the lowered limit")
	}
	sys.Close(f.fillers[len(f.fillers)-1])
	f.fillers = f.fillers[:len(f.fillers)-1]
}

// Restore closes what FillAllButOne took and puts the limit back.
func (f *FdStarver) Restore() {
	for _, fd := range f.fillers {
		sys.Close(fd)
	}
	f.fillers = nil
	sys.Setrlimit(sys.RLIMIT_NOFILE, &f.rl)
}
