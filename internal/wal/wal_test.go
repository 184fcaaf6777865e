package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/iopath/iopath/internal/sys"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// engines are the engines a test runs with: io_uring only where it works.
func engines(t *testing.T) []Engine {
	t.Helper()
	es := []Engine{Pwrite}
	if err := uringWorks(); err != nil {
		t.Logf("io_uring engine not tested: %v", err)
	} else {
		es = append(es, IOURing)
	}
	return es
}

// uringWorks tries the io_uring engine on a scratch file.
func uringWorks() error {
	f, err := os.CreateTemp("", "wal-probe")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	ready := make(chan error)
	go func() {
		e, _, err := newUring(int(f.Fd()), f.Name(), nil)
		if err == nil {
			e.close()
		}
		ready <- err
	}()
	return <-ready
}

// open opens a new log in a temp dir with e and BatchBytes batch.
func open(t *testing.T, path string, e Engine, batch int) *Log {
	t.Helper()
	l, _, err := Open(path, Options{Perm: 0o600, BatchBytes: batch})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(e); err != nil {
		l.Close()
		t.Fatal(err)
	}
	return l
}

// payload is record i's bytes: sizes vary, some empty, some over 4 KiB.
func payload(i int) []byte {
	n := (i * 7919) % 9000
	if i%13 == 0 {
		n = 0
	}
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i + j*31)
	}
	return b
}

// readAll returns every record of the log file at path (as ReadLog does).
func readAll(t *testing.T, path string) ([][]byte, Result, error) {
	t.Helper()
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	return readFd(t, fd, path)
}

// scanBytes is readAll of a file that holds data.
func scanBytes(t *testing.T, data []byte) ([][]byte, Result, error) {
	t.Helper()
	return read(bytes.NewReader(data), "bytes", int64(len(data)))
}

func readFd(t *testing.T, fd int, path string) ([][]byte, Result, error) {
	t.Helper()
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return read(FdReader(fd), path, st.Size)
}

func read(r io.ReaderAt, path string, size int64) ([][]byte, Result, error) {
	var recs [][]byte
	if fresh, err := CheckFileHeader(r, path, size); err != nil || fresh {
		return nil, Result{}, err
	}
	res, err := Scan(r, path, size, false, func(_ int64, rec []byte) error {
		recs = append(recs, bytes.Clone(rec))
		return nil
	})
	return recs, res, err
}

func TestFrameRoundTrip(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l := open(t, path, e, 64<<10)
			const n = 100
			for i := range n {
				if err := l.Append(context.Background(), payload(i)); err != nil {
					t.Fatal(err)
				}
			}
			// A record larger than the batch is committed alone.
			big := bytes.Repeat([]byte("big"), 100<<10)
			if err := l.Append(context.Background(), big); err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			if err := l.Replay(func(rec []byte) error { got = append(got, bytes.Clone(rec)); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if len(got) != n+1 || !bytes.Equal(got[n], big) {
				t.Fatalf("Replay: %d records, want %d", len(got), n+1)
			}
			for i := range n {
				if !bytes.Equal(got[i], payload(i)) {
					t.Fatalf("record %d: %d bytes, want %d", i, len(got[i]), len(payload(i)))
				}
			}
			recs, r, err := readAll(t, path)
			if err != nil || len(recs) != n+1 || r.Torn != 0 {
				t.Fatalf("read back: %d records, %+v, %v", len(recs), r, err)
			}
		})
	}
}

// Every header field is covered by the CRC, and a header is valid at its
// own offset only.
func TestHeaderFields(t *testing.T) {
	p := []byte("hello")
	frame := make([]byte, HeaderLen+len(p))
	PutHeader(frame, PayloadCRC(p), len(p), 1234, 56)
	copy(frame[HeaderLen:], p)
	h := parseHeader(frame)
	if h.length != 5 || h.off != 1234 || h.back != 56 || !h.check(frame) {
		t.Fatalf("header %+v, check %v", h, h.check(frame))
	}
	for i := range frame {
		for bit := range 8 {
			f := bytes.Clone(frame)
			f[i] ^= 1 << bit
			h := parseHeader(f)
			if int(h.length) == len(p) && h.check(f) {
				t.Fatalf("flipping bit %d of byte %d went unseen", bit, i)
			}
		}
	}
	// Zeros never pass for a record, anywhere after the file header.
	zero := make([]byte, HeaderLen)
	if h := parseHeader(zero); h.off == FileHeaderLen || h.check(zero) {
		t.Fatalf("a zero header checks out")
	}
	if crc32.Checksum(zero[4:], castagnoli) == 0 {
		t.Fatal("the CRC of a zero header is 0")
	}
}

// A torn tail at every byte of the last commit is seen as one, and the
// records before it stay (Scan at every offset; Open, which truncates
// and syncs, at some).
func TestTornTailEveryOffset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	l := open(t, path, Pwrite, 1<<20)
	for i := range 5 {
		if err := l.Append(context.Background(), bytes.Repeat([]byte{byte(i)}, 100+50*i)); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := os.Stat(path)
	kept := st.Size()
	last := payload(5008) // 4352 bytes: one commit of one record (over 4 KiB), the last
	if err := l.Append(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(whole))-kept < 4096 {
		t.Fatalf("the last record is %d bytes", int64(len(whole))-kept)
	}
	zeroed := make([]byte, len(whole))
	for cut := kept; cut < int64(len(whole)); cut++ {
		for _, zeros := range []bool{false, true} {
			b := whole[:cut]
			if zeros {
				// The size made it to disk, the data did not.
				b = zeroed
				copy(b, whole[:cut])
				clear(b[cut:])
			}
			r, err := Scan(bytes.NewReader(b), "bytes", int64(len(b)), false, nil)
			if err != nil || r.End != kept || r.Torn != int64(len(b))-kept || r.Records != 5 {
				t.Fatalf("cut at %d (zeros %v): %+v, %v; want end %d", cut, zeros, r, err, kept)
			}
			if cut%997 != 0 && cut != kept && cut != int64(len(whole))-1 {
				continue
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			l, _, err := Open(path, Options{Perm: 0o600, BatchBytes: 1 << 20})
			if err != nil {
				t.Fatalf("cut at %d (zeros %v): %v", cut, zeros, err)
			}
			l.Close()
			if st, _ := os.Stat(path); st.Size() != kept {
				t.Fatalf("cut at %d: size %d after Open, want %d", cut, st.Size(), kept)
			}
		}
	}
}

// appendCommits writes n commits of k records each and returns the
// offsets at which each commit starts and the file's end.
func appendCommits(t *testing.T, path string, n, k int) []int64 {
	t.Helper()
	var starts []int64
	var l *Log
	TestHookCommit = func(p string, _ int, _ []byte, off int64) (bool, error) {
		if p == path {
			starts = append(starts, off)
		}
		return false, nil
	}
	defer func() { TestHookCommit = nil }()
	l = open(t, path, Pwrite, 1<<20)
	defer l.Close()
	for c := range n {
		// k records in one commit: queue them while a commit is held.
		var wg sync.WaitGroup
		for j := range k {
			wg.Go(func() {
				if err := l.Append(context.Background(), payload(c*k+j)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	return starts
}

// Damage in a commit followed by a later commit is corruption, reported
// with the offset and never truncated; the same damage in the last
// commit is a torn tail.
func TestCorruptionInTheMiddle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	appendCommits(t, path, 6, 1)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	offs := recordOffsets(t, whole)
	if len(offs) != 6 {
		t.Fatalf("%d records", len(offs))
	}
	for i, off := range offs {
		for _, what := range []string{"payload", "header", "zeros"} {
			b := bytes.Clone(whole)
			switch what {
			case "payload":
				if n := int64(len(payload(i))); n > 0 {
					b[off+HeaderLen+n/2] ^= 0x40
				} else {
					b[off] ^= 0x40 // no payload: the CRC
				}
			case "header":
				b[off+5] ^= 1
			case "zeros":
				end := int64(len(b))
				if i+1 < len(offs) {
					end = offs[i+1]
				}
				clear(b[off:end])
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			l, r, err := Open(path, Options{Perm: 0o600, BatchBytes: 1 << 20})
			if i == len(offs)-1 {
				if err != nil || r.End != off {
					t.Fatalf("%s of the last record: %+v, %v; want a torn tail at %d", what, r, err, off)
				}
				l.Close()
				continue
			}
			if err == nil {
				l.Close()
				t.Fatalf("%s of record %d of %d: opened (%+v), want ErrCorrupt", what, i, len(offs), r)
			}
			if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprintf("offset %d", off))) ||
				!bytes.Contains([]byte(err.Error()), []byte(path)) {
				t.Fatalf("%s of record %d: %v; want ErrCorrupt naming the path and offset %d", what, i, err, off)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("%T is not an *fs.PathError", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
				t.Fatalf("%s of record %d: the file changed", what, i)
			}
		}
	}
}

// recordOffsets lists the offsets of the records in a whole good log.
func recordOffsets(t *testing.T, b []byte) []int64 {
	t.Helper()
	var offs []int64
	for off := int64(FileHeaderLen); off < int64(len(b)); {
		offs = append(offs, off)
		off += HeaderLen + int64(binary.LittleEndian.Uint32(b[off+4:]))
	}
	return offs
}

// Within the last commit, damage followed by good records of the same
// commit (pages written out of order before a power loss) is a torn
// tail from the damage on.
func TestTornInsideLastCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var starts []int64
	TestHookCommit = func(p string, _ int, _ []byte, off int64) (bool, error) {
		if p == path {
			starts = append(starts, off)
		}
		return false, nil
	}
	defer func() { TestHookCommit = nil }()
	l := open(t, path, Pwrite, 1<<20)
	ctx := context.Background()
	if err := l.Append(ctx, payload(1)); err != nil {
		t.Fatal(err)
	}
	// The second commit: several records, held together by BatchWait.
	l.opts.BatchWait = 50e6
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := l.Append(ctx, payload(100+i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	l.Close()
	if len(starts) != 2 {
		t.Fatalf("%d commits, want 2", len(starts))
	}
	whole, _ := os.ReadFile(path)
	offs := recordOffsets(t, whole)
	if len(offs) != 9 {
		t.Fatalf("%d records, want 9", len(offs))
	}
	// Zero the second record of the last commit: the rest of that commit
	// is good but goes with it.
	b := bytes.Clone(whole)
	clear(b[offs[2] : offs[2]+HeaderLen])
	os.WriteFile(path, b, 0o600)
	l2, r, err := Open(path, Options{Perm: 0o600, BatchBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if r.End != offs[2] || r.Records != 2 {
		t.Fatalf("%+v, want the end at %d after 2 records", r, offs[2])
	}
}

// A failed commit fails its Appends and every later one; the log then
// opens with the records before it.
func TestCommitFailure(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l := open(t, path, e, 1<<20)
			ctx := context.Background()
			for i := range 3 {
				if err := l.Append(ctx, payload(i)); err != nil {
					t.Fatal(err)
				}
			}
			eio := fmt.Errorf("fdatasync: %w", sys.EIO)
			TestHookCommit = func(p string, fd int, b []byte, off int64) (bool, error) {
				if p != path {
					return false, nil
				}
				// Half the batch reaches the file, then the sync fails.
				sys.Pwrite(fd, b[:len(b)/2], off)
				return true, eio
			}
			defer func() { TestHookCommit = nil }()
			var wg sync.WaitGroup
			errs := make([]error, 16)
			for i := range errs {
				wg.Go(func() { errs[i] = l.Append(ctx, payload(10+i)) })
			}
			wg.Wait()
			for i, err := range errs {
				if !errors.Is(err, sys.EIO) {
					t.Fatalf("Append %d of the failed commit: %v", i, err)
				}
			}
			if err := l.Append(ctx, []byte("later")); !errors.Is(err, sys.EIO) {
				t.Fatalf("Append after the failure: %v", err)
			}
			if err := l.Close(); !errors.Is(err, sys.EIO) {
				t.Fatalf("Close after the failure: %v", err)
			}
			TestHookCommit = nil
			// The acknowledged records are there; whole records of the
			// failed half batch may be too (never acknowledged), and the
			// torn rest is cut.
			recs, r, err := readAll(t, path)
			if err != nil || len(recs) < 3 || r.Torn == 0 {
				t.Fatalf("after the failure: %d records, %+v, %v", len(recs), r, err)
			}
			for i := range 3 {
				if !bytes.Equal(recs[i], payload(i)) {
					t.Fatalf("record %d changed", i)
				}
			}
			l = open(t, path, e, 1<<20)
			if err := l.Append(ctx, []byte("again")); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if again, _, _ := readAll(t, path); len(again) != len(recs)+1 || string(again[len(recs)]) != "again" {
				t.Fatalf("reopened: %d records, want %d", len(again), len(recs)+1)
			}
		})
	}
}

func TestLockedByAnother(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l := open(t, path, Pwrite, 1<<20)
	defer l.Close()
	_, _, err := Open(path, Options{Perm: 0o600, BatchBytes: 1 << 20})
	if !errors.Is(err, sys.EWOULDBLOCK) {
		t.Fatalf("second Open: %v, want EWOULDBLOCK", err)
	}
}

func TestForeignFile(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"text":    []byte("not a log at all, but a file of text that someone cares about\n"),
		"version": append([]byte("IOPATHWL\x02\x00\x00\x00"), make([]byte, 40)...),
		"short":   []byte("hello"),
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, data, 0o600)
		_, _, err := Open(path, Options{Perm: 0o600, BatchBytes: 1 << 20})
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
			t.Errorf("%s: the file changed", name)
		}
	}
	// A header torn at creation: a new log.
	for _, data := range [][]byte{FileHeader()[:7], make([]byte, FileHeaderLen), append(FileHeader()[:9], 0, 0)} {
		path := filepath.Join(dir, "torn")
		os.WriteFile(path, data, 0o600)
		l, _, err := Open(path, Options{Perm: 0o600, BatchBytes: 1 << 20})
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		l.Close()
		if b, _ := os.ReadFile(path); !bytes.Equal(b, FileHeader()) {
			t.Fatalf("%q: %q after Open", data, b)
		}
	}
}

// FuzzScan: whatever the file holds, Scan neither panics nor reads past
// its size, and what it keeps scans again as a clean log.
func FuzzScan(f *testing.F) {
	good := FileHeader()
	for i := range 4 {
		p := payload(i)
		h := make([]byte, HeaderLen)
		PutHeader(h, PayloadCRC(p), len(p), int64(len(good)), 0)
		good = append(append(good, h...), p...)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(bytes.Clone(good), make([]byte, 100)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, r, err := scanBytes(t, data)
		if err != nil {
			return
		}
		if r.End+r.Torn != int64(len(data)) && len(data) > FileHeaderLen {
			t.Fatalf("%+v for %d bytes", r, len(data))
		}
		if len(data) <= FileHeaderLen {
			return
		}
		again, r2, err := scanBytes(t, data[:r.End])
		if err != nil || r2.Torn != 0 || len(again) != len(recs) {
			t.Fatalf("the kept part: %d records (want %d), %+v, %v", len(again), len(recs), r2, err)
		}
	})
}

// A dangling symbolic link gets its target created; a link to a log
// opens the log.
func TestSymlinks(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	target := filepath.Join(dir, "target")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	l := open(t, link, Pwrite, 1<<20)
	if err := l.Append(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if recs, _, err := readAll(t, target); err != nil || len(recs) != 1 {
		t.Fatalf("the target: %d records, %v", len(recs), err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link: %v, %v", fi, err)
	}
}

// Each engine reports a write the kernel refuses as an *fs.PathError
// naming the file, with the errno, and makes no fdatasync after it.
func TestEngineWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro")
	os.WriteFile(path, nil, 0o600)
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	buf, err := sys.MmapAnon(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(buf)
	for _, e := range engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			done := make(chan struct{})
			go func() { // the io_uring engine lives on a locked thread
				defer close(done)
				if e.Pinned {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
				}
				eng, _, err := e.New(fd, path, [][]byte{buf})
				if err != nil {
					t.Error(err)
					return
				}
				defer eng.close()
				writes, syncs, err := eng.commit(buf[:100], 0, 0)
				var pe *fs.PathError
				if !errors.Is(err, sys.EBADF) || !errors.As(err, &pe) || pe.Path != path || pe.Op != "write" {
					t.Errorf("commit on a read-only descriptor: %v", err)
				}
				if writes != 1 || syncs > 1 || eng.broken() {
					t.Errorf("%d writes, %d syncs, broken %v", writes, syncs, eng.broken())
				}
			}()
			<-done
		})
	}
}
