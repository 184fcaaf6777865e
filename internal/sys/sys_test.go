package sys

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenErrorsArePathErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing")
	_, err := Open(p, O_RDONLY)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != p || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %#v, want *fs.PathError for %s wrapping ENOENT", err, p)
	}
}

func TestReadsAgree(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	want := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := Open(p, O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)

	b := make([]byte, 4096)
	if n, err := Pread(fd, b, 4096); err != nil || n != 4096 || !bytes.Equal(b, want[4096:8192]) {
		t.Fatalf("Pread: n=%d err=%v", n, err)
	}
	iov := []Iovec{{Base: &b[0]}}
	iov[0].SetLen(len(b))
	// The file was just written: its pages are cached, so RWF_NOWAIT reads.
	n, err := PreadvNowait(fd, iov, 8192)
	if err == EAGAIN || err == EOPNOTSUPP {
		t.Skipf("RWF_NOWAIT read not served here: %v", err)
	}
	if err != nil || n != 4096 || !bytes.Equal(b, want[8192:12288]) {
		t.Fatalf("PreadvNowait: n=%d err=%v", n, err)
	}
	b2 := make([]byte, 8192)
	iov2 := []Iovec{{Base: &b2[0]}, {Base: &b2[4096]}}
	iov2[0].SetLen(4096)
	iov2[1].SetLen(4096)
	if n, err := Preadv(fd, iov2, 0); err != nil || n != 8192 || !bytes.Equal(b2, want[:8192]) {
		t.Fatalf("Preadv: n=%d err=%v", n, err)
	}
	if n, err := Pread(fd, b, int64(len(want))); err != nil || n != 0 {
		t.Fatalf("Pread at EOF: n=%d err=%v", n, err)
	}
}

func TestMincoreSeesCachedPages(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := Open(p, O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	m, err := Mmap(fd, 0, 64<<10, PROT_READ, MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer Munmap(m)
	vec := make([]byte, (64<<10)/PageSize())
	if err := Mincore(m, vec); err != nil {
		t.Fatal(err)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Fatalf("page %d of a file just written is not resident", i)
		}
	}
}

func TestErrnoUnwraps(t *testing.T) {
	err := &fs.PathError{Op: "read", Path: "x", Err: fmt.Errorf("at offset 5: %w", EIO)}
	if e, ok := Errno(err); !ok || e != EIO {
		t.Fatalf("Errno(%v) = %v, %v", err, e, ok)
	}
	if _, ok := Errno(errors.New("plain")); ok {
		t.Fatal("found an errno in a plain error")
	}
}

// SeekSet sets the position the next read(2) starts at, and reports a bad
// descriptor as its errno.
func TestSeekSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := Open(path, O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	for _, off := range []int64{7, 0, 3, 20} {
		if n, err := SeekSet(fd, off); n != off || err != nil {
			t.Fatalf("SeekSet(%d) = %d, %v", off, n, err)
		}
		b := make([]byte, 2)
		n, _ := Read(fd, b)
		want := ""
		if off < 10 {
			want = "0123456789"[off : off+2]
		}
		if string(b[:n]) != want {
			t.Errorf("after SeekSet(%d) read %q, want %q", off, b[:n], want)
		}
	}
	if _, err := SeekSet(-1, 0); !errors.Is(err, EBADF) {
		t.Errorf("SeekSet on fd -1: %v, want EBADF", err)
	}
}
