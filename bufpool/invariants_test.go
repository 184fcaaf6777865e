//go:build invariants

package bufpool

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// mustPanic runs f and fails unless it panics with a message containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want one containing %q", want)
			return
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

func TestInvariantsDoubleRelease(t *testing.T) {
	var p Pool
	for _, n := range []int{0, 10, 5000, 1 << 20} {
		b := p.Get(n)
		b.Release()
		mustPanic(t, "double Release", b.Release)
	}
	b, err := p.ReadAll(bytes.NewReader([]byte("hello")))
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	mustPanic(t, "double Release", b.Release)
	if n := p.outstanding(); n != 0 {
		t.Errorf("%d Bufs outstanding", n)
	}
}

func TestInvariantsUseAfterRelease(t *testing.T) {
	var p Pool
	b := p.Get(100)
	b.Release()
	mustPanic(t, "Bytes called on a Buf after its Release", func() { b.Bytes() })
	mustPanic(t, "Len called on a Buf after its Release", func() { b.Len() })
	mustPanic(t, "Cap called on a Buf after its Release", func() { b.Cap() })

	// The stale handle stays dead even after its memory is handed out again.
	for range 10 {
		c := p.Get(100)
		mustPanic(t, "after its Release", func() { b.Bytes() })
		mustPanic(t, "double Release", b.Release)
		c.Release()
	}
}

func TestInvariantsNotFromPool(t *testing.T) {
	var b Buf
	mustPanic(t, "did not come from a Pool", func() { b.Bytes() })
	b.Release() // no pool: nothing to give back to
}

func TestInvariantsPoison(t *testing.T) {
	var p Pool
	b := p.Get(4096)
	for i, c := range b.Bytes()[:b.Cap()] {
		if c != poisonByte {
			t.Fatalf("new memory not poisoned at %d: %#x", i, c)
		}
	}
	buf := b.Bytes()
	copy(buf, "data")
	b.Release()
	// A slice kept past Release sees poison, not the data.
	if !bytes.Equal(buf[:4], []byte{poisonByte, poisonByte, poisonByte, poisonByte}) {
		t.Errorf("released memory not poisoned: %q", buf[:4])
	}
}

// TestInvariantsWriteAfterRelease: a write through a slice kept past Release
// is caught when the memory is handed out again.
func TestInvariantsWriteAfterRelease(t *testing.T) {
	var p Pool
	for range 100 { // sync.Pool is per-P: retry until the memory comes back
		b := p.Get(5000)
		kept := b.Bytes()
		b.Release()
		kept[4999] = 1
		caught := false
		func() {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				if msg, _ := r.(string); !strings.Contains(msg, "written after its Release (at offset 4999)") {
					t.Fatalf("panic %v", r)
				}
				caught = true
			}()
			p.Get(6000).Release()
		}()
		if caught {
			return
		}
		kept[4999] = poisonByte // not handed out again: undo, try again
	}
	t.Error("a write after Release was never caught")
}

// TestInvariantsReadAllNoLeak: ReadAll and ReadFile release every internal
// buffer, on success and on error.
func TestInvariantsReadAllNoLeak(t *testing.T) {
	var p Pool
	boom := errors.New("boom")
	for _, n := range []int{0, 1, 4096, 4097, 100000, 1 << 20} {
		data := pattern(n, n)
		for _, rd := range []io.Reader{
			hidden{bytes.NewReader(data)},
			statReader{hidden{bytes.NewReader(data)}, 10, 0},
			lenReader{hidden{bytes.NewReader(data)}, n},
			&dataThenErr{data, boom},
		} {
			b, err := p.ReadAll(rd)
			if err == nil {
				b.Release()
			}
			if got := p.outstanding(); got != 0 {
				t.Fatalf("%T, %d bytes: %d Bufs outstanding after ReadAll and Release", rd, n, got)
			}
		}
		b, err := p.ReadFile(writeFile(t, t.TempDir(), data))
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		if _, err := p.ReadFile(t.TempDir()); err == nil {
			t.Fatal("ReadFile of a directory did not fail")
		}
		if got := p.outstanding(); got != 0 {
			t.Fatalf("ReadFile, %d bytes: %d Bufs outstanding", n, got)
		}
	}
}
