package fileio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

// testFile writes n bytes of a pattern to a new file and returns its
// contents and an open read-only descriptor.
func testFile(t *testing.T, n int) ([]byte, int) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(fd) })
	return data, fd
}

// Every synchronous reader gives the file's bytes, whole or cut short
// by the end, also when each read returns only part (TestMaxRead).
func TestSyncReaders(t *testing.T) {
	data, fd := testFile(t, 300<<10+123)
	for _, max := range []int{0, 777} {
		TestMaxRead = max
		for _, workers := range []int{1, 3} {
			dst := make([]byte, len(data)+4096)
			n, err := ReadChunks(fd, dst, 0, 64<<10, workers, false, false)
			if err != nil || n != len(data) || !bytes.Equal(dst[:n], data) {
				t.Errorf("max %d: ReadChunks ×%d: %d bytes, %v", max, workers, n, err)
			}
		}
		var nw Nowait
		b := make([]byte, 1000)
		if n, err := PreadFull(fd, b, int64(len(data)-10), &nw, false); n != 10 || err != nil || !bytes.Equal(b[:n], data[len(data)-10:]) {
			t.Errorf("max %d: PreadFull at the end: %d, %v", max, n, err)
		}
	}
	TestMaxRead = 0
}

// A batch: the inline pass serves what is cached, ReadSync the rest, with
// io.EOF for requests the end cuts short.
func TestBatch(t *testing.T) {
	data, fd := testFile(t, 100<<10)
	reqs := []Request{
		{Off: 0, Buf: make([]byte, 4096)},
		{Off: 4096, Buf: make([]byte, 4096)}, // adjacent: one preadv
		{Off: 50 << 10, Buf: make([]byte, 100)},
		{Off: 100<<10 - 5, Buf: make([]byte, 10)}, // cut by the end
	}
	idx := []int32{0, 1, 2, 3}
	var in Inline
	rest, tried := in.Read(fd, reqs, idx)
	if !tried {
		t.Fatal("the inline pass was skipped")
	}
	ReadSync(fd, reqs, rest, 2, false)
	for i, r := range reqs {
		end := min(r.Off+int64(len(r.Buf)), int64(len(data)))
		want := data[r.Off:end]
		var werr error
		if len(want) < len(r.Buf) {
			werr = io.EOF
		}
		if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
			t.Errorf("request %d: N %d err %v, want %d %v", i, r.N, r.Err, len(want), werr)
		}
	}
}

// The mapping copiers split a batch over workers only from
// mappedParallelMin bytes, and copy the right bytes.
func TestCopyRequests(t *testing.T) {
	reqs := make([]Request, 64)
	for i := range reqs {
		reqs[i] = Request{Off: int64(i) << 15, Buf: make([]byte, 32<<10)}
	}
	if got := copyWorkers(reqs, []int32{0, 1, 2, 3}, 3); got != 1 {
		t.Errorf("4 requests of 32 KiB: %d workers, want 1", got)
	}
	idx := make([]int32, len(reqs))
	for i := range idx {
		idx[i] = int32(i)
	}
	if got := copyWorkers(reqs, idx, 3); got != 3 {
		t.Errorf("64 requests of 32 KiB: %d workers, want 3", got)
	}
	m := make([]byte, 2<<20-100) // the last request runs past the "mapping"
	for i := range m {
		m[i] = byte(i >> 3)
	}
	changed := errors.New("changed")
	rest := CopyRequests(m, reqs, idx, 3, changed)
	if len(rest) != 1 || rest[0] != 63 {
		t.Errorf("requests left: %v, want [63]", rest)
	}
	for i, r := range reqs {
		want := m[r.Off:min(r.Off+int64(len(r.Buf)), int64(len(m)))]
		if r.Err != nil || r.N != len(want) || !bytes.Equal(r.Buf[:r.N], want) {
			t.Errorf("request %d: N %d, %v", i, r.N, r.Err)
		}
	}
	if n, faulted := CopyAt(m, make([]byte, 10), int64(len(m))); n != 0 || faulted {
		t.Errorf("CopyAt past the end: %d, %v", n, faulted)
	}
}

// ReadNonblock keeps a FIFO's EAGAIN (no data yet) and counts its calls.
func TestReadNonblockFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	fd, err := sys.Open(path, syscall.O_RDWR|sys.O_NONBLOCK) // a writer: reads say EAGAIN
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	var calls int64
	if _, err := ReadNonblock(fd, make([]byte, 10), &calls); !errors.Is(err, sys.EAGAIN) || calls != 2 {
		t.Errorf("FIFO without data: %v after %d calls, want EAGAIN after 2 (read, fstat)", err, calls)
	}
}

// A ring reads a batch in SQEs of at most MaxSQELen bytes, continuing
// short reads, with io.EOF only at the end of the file; ReadRings fills a
// whole destination the same way over several rings.
func TestRing(t *testing.T) {
	data, fd := testFile(t, 200<<10+77)
	g, err := NewRing(4, nil)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EACCES) {
		t.Skipf("io_uring refused here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	old := MaxSQELen
	MaxSQELen = 8 << 10
	defer func() { MaxSQELen = old }()
	reqs := []Request{
		{Off: 0, Buf: make([]byte, 100<<10)},
		{Off: 150 << 10, Buf: make([]byte, 100<<10)}, // past the end
		{Off: 7, Buf: make([]byte, 8<<10)},
	}
	if err := g.Read(int32(fd), reqs, []int32{0, 1, 2}, false); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		want := data[r.Off:min(r.Off+int64(len(r.Buf)), int64(len(data)))]
		var werr error
		if len(want) < len(r.Buf) {
			werr = io.EOF
		}
		if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
			t.Errorf("request %d: N %d err %v, want %d %v", i, r.N, r.Err, len(want), werr)
		}
	}
	dst := make([]byte, len(data)+1)
	n, err := ReadRings(fd, dst, 32<<10, 2, false, func() (*Ring, error) { return NewRing(4, nil) })
	if err != nil || n != len(data) || !bytes.Equal(dst[:n], data) {
		t.Errorf("ReadRings: %d bytes, %v; want %d", n, err, len(data))
	}
}

// A RWF_NOWAIT read at the end of a cached file is the end: Try handles
// it with one call (0 bytes), with no blocking read after it; in the
// middle it reads the data.
func TestNowaitEOF(t *testing.T) {
	data, fd := testFile(t, 10)
	buf := make([]byte, 4)
	iov := []sys.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	var nw Nowait
	var calls int64
	if n, handled, err := nw.Try(fd, iov, len(buf), 6, &calls); !handled || err != nil || n != 4 || !bytes.Equal(buf, data[6:]) {
		t.Fatalf("middle: %d bytes %q, handled %v, %v", n, buf[:n], handled, err)
	}
	for _, off := range []int64{10, 11} {
		calls = 0
		n, handled, err := nw.Try(fd, iov, len(buf), off, &calls)
		if nw.Off {
			t.Skip("the kernel refuses RWF_NOWAIT on this filesystem: nothing to test")
		}
		if !handled || err != nil || n != 0 || calls != 1 {
			t.Errorf("at offset %d of 10: %d bytes, handled %v, %v, %d calls; want the end, handled, in 1 call", off, n, handled, err, calls)
		}
	}
}
