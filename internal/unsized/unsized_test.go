package unsized

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

func TestError(t *testing.T) {
	err := Error("/proc/self/pagemap", 64<<20, "iopath.WithPseudoLimit")
	var pe *fs.PathError
	if !errors.Is(err, ErrLimit) || !errors.As(err, &pe) || pe.Path != "/proc/self/pagemap" {
		t.Fatalf("%v: want an *fs.PathError naming the path, wrapping ErrLimit", err)
	}
	for _, want := range []string{"64MiB", "iopath.WithPseudoLimit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if Limit(0) != DefaultLimit || Limit(5) != 5 {
		t.Error("Limit: 0 is the default, any other value itself")
	}
}

func TestPseudo(t *testing.T) {
	if !PseudoPath("/proc/self/status") {
		t.Error("/proc/self/status is not on a pseudo-filesystem")
	}
	if PseudoPath(t.TempDir()) {
		t.Error("a temporary directory is on a pseudo-filesystem")
	}
}

// PseudoStat answers as PseudoFD does: a procfs file (device major 0)
// is a pseudo-file, a file on a disk or on tmpfs (major 0 too, asked with
// fstatfs) is not.
func TestPseudoStat(t *testing.T) {
	for _, c := range []struct {
		path   string
		pseudo bool
	}{{"/proc/self/status", true}, {os.Args[0], false}, {"/dev/shm", false}, {t.TempDir(), false}} {
		fd, err := sys.Open(c.path, sys.O_RDONLY)
		if err != nil {
			t.Logf("%s: %v", c.path, err)
			continue
		}
		var st sys.Stat_t
		if err := sys.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		if got := PseudoStat(fd, st.Dev); got != c.pseudo || got != PseudoFD(fd) {
			t.Errorf("%s (device %d:%d): PseudoStat %v, PseudoFD %v; want %v", c.path, sys.Major(st.Dev), sys.Minor(st.Dev), got, PseudoFD(fd), c.pseudo)
		}
		sys.Close(fd)
	}
}

func TestBound(t *testing.T) {
	// A file that stated no size is limited, exactly: n bytes pass.
	b := NewBound(-1, 0, 100)
	if b.Over(100) || !b.Over(101) || b.Limit() != 100 {
		t.Error("a file of unknown size: 100 bytes are within a limit of 100, 101 are not")
	}
	if c := b.MaxCap(); c < 101 || c > 100+3*4096 {
		t.Errorf("MaxCap %d for a limit of 100", c)
	}
	// A regular file that stated a size is not limited, even when it
	// grows past the limit.
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b = NewBound(int(f.Fd()), 10, 100)
	if b.Over(1 << 30) {
		t.Error("a regular file that stated its size was limited")
	}
	// A pseudo-file's stated size means nothing: it is limited.
	p, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer p.Close()
	b = NewBound(int(p.Fd()), 4096, 100)
	if !b.Over(101) {
		t.Error("a pseudo-file that stated a size was not limited")
	}
}
