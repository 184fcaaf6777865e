package outfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

// onlyFiles fails unless dir holds exactly the names given: no temporary
// file left beside them.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range ents {
		have = append(have, e.Name())
	}
	if strings.Join(have, ",") != strings.Join(names, ",") {
		t.Fatalf("%s holds %q, want %q", dir, have, names)
	}
}

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func TestWrite(t *testing.T) {
	fds := testenv.OpenFDs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	old := syscall.Umask(0o022)
	syscall.Umask(old)

	// A new file: written whole, with os.Create's mode.
	if err := Write(path, false, nil, writeString("one")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Fatalf("content %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o666&^fs.FileMode(old) {
		t.Errorf("mode %v, want %v", st.Mode().Perm(), 0o666&^fs.FileMode(old))
	}

	// Over it without replace: refused, untouched.
	err := Write(path, false, nil, writeString("two"))
	if !errors.Is(err, ErrExists) || !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("over an existing file: %v; want ErrExists naming it", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Fatalf("refused write changed the file: %q", b)
	}

	// With replace: replaced, its mode kept.
	os.Chmod(path, 0o600)
	if err := Write(path, true, nil, writeString("three")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three" {
		t.Fatalf("content %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file's mode %v, want the old 0600", st.Mode().Perm())
	}

	// A failed write leaves the old file as it was.
	boom := errors.New("boom")
	err = Write(path, true, nil, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three" {
		t.Fatalf("failed write changed the file: %q", b)
	}
	onlyFiles(t, dir, "out")
	if n := testenv.OpenFDs(t); n != fds {
		t.Errorf("%d descriptors open, %d before", n, fds)
	}
}

// A target that appears while the file is being written is not replaced.
func TestCommitRace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	tmp, err := Create(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(tmp, "mine")
	os.WriteFile(path, []byte("theirs"), 0o644)
	if err := tmp.Commit(false, true); !errors.Is(err, ErrExists) {
		t.Fatalf("commit over a file that appeared: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs" {
		t.Fatalf("the file that appeared was replaced: %q", b)
	}
	onlyFiles(t, dir, "out")
	tmp.Abort() // nothing left to do
}

// track is told the temporary file while it exists, and forgets it after.
func TestTrack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	live := map[string]bool{}
	track := func(p string) func() {
		live[p] = true
		return func() { delete(live, p) }
	}
	tmp, err := Create(path, track)
	if err != nil {
		t.Fatal(err)
	}
	if !live[tmp.Name()] || filepath.Dir(tmp.Name()) != dir || !strings.HasPrefix(filepath.Base(tmp.Name()), ".out.") {
		t.Fatalf("temporary file %s, tracked %v", tmp.Name(), live)
	}
	tmp.Abort()
	if len(live) != 0 {
		t.Fatalf("still tracked after Abort: %v", live)
	}
	onlyFiles(t, dir)
	if err := Write(path, false, track, writeString("x")); err != nil || len(live) != 0 {
		t.Fatalf("Write: %v; still tracked: %v", err, live)
	}
}

// A symbolic link target: the file it names is written, the link stays.
func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	os.WriteFile(real, []byte("old"), 0o644)
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, false, nil, writeString("new")); !errors.Is(err, ErrExists) {
		t.Fatalf("over a link to an existing file without replace: %v", err)
	}
	if err := Write(link, true, nil, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st, err)
	}
	if b, _ := os.ReadFile(real); string(b) != "new" {
		t.Fatalf("the linked file holds %q", b)
	}
	onlyFiles(t, dir, "link", "real")
}

// A name as long as a name can be still gets its temporary file.
func TestLongName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, strings.Repeat("n", 255))
	if err := Write(path, false, nil, writeString("x")); err != nil {
		t.Fatal(err)
	}
	onlyFiles(t, dir, filepath.Base(path))
}

// TestNotRegularTarget: a FIFO or a directory where the file is to go is
// never replaced, with replace or without, and nothing is left beside it.
func TestNotRegularTarget(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{fifo, sub} {
		for _, replace := range []bool{false, true} {
			err := Write(target, replace, nil, writeString("x"))
			if !errors.Is(err, sys.ErrNotRegular) || !strings.Contains(err.Error(), "even with --force") {
				t.Errorf("Write(%s, replace %v) = %v", target, replace, err)
			}
		}
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Rename(tmp, fifo, true); !errors.Is(err, sys.ErrNotRegular) {
		t.Errorf("Rename over a FIFO = %v", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone: %v %v", st, err)
	}
	onlyFiles(t, dir, "fifo", "sub", "tmp")
}
