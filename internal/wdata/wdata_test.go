package wdata

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write writes [0, size) as engines do: blocks of bs from a primed
// buffer, each filled for its offset.
func write(t *testing.T, s *Source, path string, size int64, bs int) {
	t.Helper()
	writeFrom(t, s, path, 0, size, bs)
}

// writeFrom writes [base, base+size) as write does [0, size).
func writeFrom(t *testing.T, s *Source, path string, base, size int64, bs int) {
	t.Helper()
	buf := make([]byte, bs)
	s.Prime(buf)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off := base; off < base+size; off += int64(bs) {
		b := buf[:min(int64(bs), base+size-off)]
		s.Fill(0, off, b)
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v.dat")
	const size, bs = 1<<20 + 1000, 64 << 10
	s := New(3, bs)
	s.SetPass(1)
	write(t, s, path, size, bs)
	if _, err := s.Verify(path, 0, size); err != nil {
		t.Fatalf("good file: %v", err)
	}
	corrupt := func(off int64, b []byte, want string) {
		t.Helper()
		write(t, s, path, size, bs)
		f, _ := os.OpenFile(path, os.O_WRONLY, 0)
		f.WriteAt(b, off)
		f.Close()
		_, err := s.Verify(path, 0, size)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), want) {
			t.Errorf("corrupted at %d: %v, want a mismatch saying %q", off, err, want)
		}
	}
	corrupt(70000, []byte{1}, "other bytes")
	corrupt(4096, make([]byte, Sector), "zeros")
	// A sector of another offset.
	other := make([]byte, Sector)
	buf := make([]byte, bs)
	s.Prime(buf)
	s.Fill(0, 0, buf)
	copy(other, buf[:Sector])
	corrupt(bs+Sector, other, "the sector written for offset 0")
	// A block of an earlier pass.
	old := make([]byte, bs)
	s.Prime(old)
	s.SetPass(0)
	s.Fill(0, 2*bs, old)
	s.SetPass(1)
	corrupt(2*bs, old, "another pass")
	// A short file.
	write(t, s, path, size, bs)
	os.Truncate(path, size-10)
	if _, err := s.Verify(path, 0, size); !errors.Is(err, ErrMismatch) {
		t.Errorf("short file: %v", err)
	}
}

// TestVerifyOddBlocks: blocks that are not a multiple of the page size,
// from a base that is not page-aligned, over several of Verify's chunks:
// its O_DIRECT reads stay page-aligned (an unaligned one is EINVAL), and
// a corrupted byte in a block that straddles two chunks is still found.
func TestVerifyOddBlocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v.dat")
	const size = 9<<20 + 123
	for _, bs := range []int{5000, 513, 4097} {
		for _, base := range []int64{0, 1000} {
			s := New(5, bs)
			s.SetPass(2)
			writeFrom(t, s, path, base, size, bs)
			direct, err := s.Verify(path, base, size)
			if err != nil {
				t.Fatalf("bs %d, base %d: %v", bs, base, err)
			}
			if !direct {
				t.Logf("bs %d: %s refuses O_DIRECT; verified through the page cache", bs, dir)
			}
			// The block holding the byte at 4 MiB starts before it.
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt([]byte{0xff, 0xfe}, 4<<20-1)
			f.Close()
			if _, err := s.Verify(path, base, size); !errors.Is(err, ErrMismatch) {
				t.Errorf("bs %d, base %d, corrupted at 4 MiB: %v", bs, base, err)
			}
		}
	}
}
