package iopath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

// Size is the size at Open; Stat is the open file's now, from its
// descriptor: a path renamed over since names another file, which Stat
// never looks at.
func TestFileStat(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	path := writeFile(t, dir, content(5000, 9))
	if err := os.Chmod(path, 0o640|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	for _, engine := range []string{"pread", "mmap", "io_uring"} {
		f, err := Open(path, WithEngine(engine))
		if errors.Is(err, ErrNotSupported) {
			t.Logf("%s: %v", engine, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if f.Size() != 5000 || fi.Size() != 5000 || fi.Name() != filepath.Base(path) || fi.IsDir() ||
			fi.Mode() != 0o640|fs.ModeSetgid || !fi.ModTime().Equal(mtime) || !fi.Mode().IsRegular() {
			t.Errorf("%s: Size %d, Stat %s %d %v %v", engine, f.Size(), fi.Name(), fi.Size(), fi.Mode(), fi.ModTime())
		}
		if st, ok := fi.Sys().(*sys.Stat_t); !ok || st.Size != 5000 {
			t.Errorf("%s: Sys() %T", engine, fi.Sys())
		}
		f.Close()
	}

	f := openT(t, path)
	defer f.Close()
	// The file grows; another file then takes its name.
	g, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.Write(make([]byte, 1000))
	g.Close()
	other := writeFile(t, t.TempDir(), content(77, 1))
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != 6000 || f.Size() != 5000 {
		t.Errorf("after growth and a rename over the path: Stat %v, %v; Size %d", fi, err, f.Size())
	}
}
