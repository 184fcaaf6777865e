package iopath

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/internal/wal"
)

// appender is what BenchmarkLog times: a Log, or the usual Go code.
type appender interface {
	append(rec []byte) error
	close() error
	commits() int64
}

type logAppender struct{ l *Log }

func (a logAppender) append(rec []byte) error { return a.l.Append(context.Background(), rec) }
func (a logAppender) close() error            { return a.l.Close() }
func (a logAppender) commits() int64          { return a.l.Stats().Commits }

// fileAppender is the usual Go code: os.File.Write and f.Sync per record,
// under a mutex.
type fileAppender struct {
	mu    sync.Mutex
	f     *os.File
	syncs int64
	// framed makes it write what a Log writes for rec: 20 bytes more,
	// in one Write, after a 16-byte file header.
	framed bool
	buf    []byte
}

func (a *fileAppender) append(rec []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := rec
	if a.framed {
		a.buf = append(append(a.buf[:0], make([]byte, LogHeaderLen)...), rec...)
		b = a.buf
	}
	if _, err := a.f.Write(b); err != nil {
		return err
	}
	a.syncs++
	return a.f.Sync()
}
func (a *fileAppender) close() error   { return a.f.Close() }
func (a *fileAppender) commits() int64 { return a.syncs }

// logKinds are what BenchmarkLog compares: os.File.Write + f.Sync per
// record under a mutex (the usual Go code), and the Log with each engine.
var logKinds = []struct {
	name string
	open func(path string) (appender, error)
}{
	{"os.File", func(path string) (appender, error) {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		return &fileAppender{f: f}, err
	}},
	{"pwrite", func(path string) (appender, error) {
		l, err := OpenLog(path, WithEngine("pwrite"))
		return logAppender{l}, err
	}},
	{"io_uring", func(path string) (appender, error) {
		l, err := OpenLog(path, WithEngine("io_uring"))
		return logAppender{l}, err
	}},
}

// BenchmarkLog measures durable appends of 4 KiB records with 1 and 64
// writers: the Log with each engine against os.File.Write + f.Sync per
// record under a mutex. records/s is the figure to compare; syncs/record
// shows the batching. The disk's speed drifts while they run, one after
// the other: "alternated" runs the three with one writer in turns of 16
// records each (each round starting with the next one), so that drift
// and the order hit all alike, and reports each one's
// records/s and the median over the rounds of the Logs' speed relative
// to os.File's (1.0: as fast).
func BenchmarkLog(b *testing.B) {
	rec := make([]byte, 4096)
	for i := range rec {
		rec[i] = byte(i * 7)
	}
	for _, writers := range []int{1, 64} {
		for _, k := range logKinds {
			b.Run(fmt.Sprintf("%s/writers=%d", k.name, writers), func(b *testing.B) {
				a := openAppender(b, k.name, k.open)
				b.SetBytes(int64(len(rec)))
				b.ReportAllocs()
				var left atomic.Int64
				left.Store(int64(b.N))
				var wg sync.WaitGroup
				errs := make(chan error, writers)
				start := time.Now()
				for range writers {
					wg.Go(func() {
						for left.Add(-1) >= 0 {
							if err := a.append(rec); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				commits := a.commits()
				if err := a.close(); err != nil {
					b.Fatal(err)
				}
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
				b.ReportMetric(float64(commits)/float64(b.N), "syncs/record")
			})
		}
	}
	b.Run("alternated/writers=1", func(b *testing.B) {
		const turn = 16
		// os.File-framed writes the bytes the Log writes (each record 20
		// bytes longer, so that it straddles two pages): against it, the
		// Log's own cost shows apart from its format's.
		kinds := append(logKinds[:1:1], logKinds[1:]...)
		kinds = append(kinds, struct {
			name string
			open func(path string) (appender, error)
		}{"os.File-framed", func(path string) (appender, error) {
			f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
			if err == nil {
				_, err = f.Write(make([]byte, 16))
			}
			return &fileAppender{f: f, framed: true}, err
		}})
		as := make([]appender, len(kinds))
		for i, k := range kinds {
			a, err := k.open(filepath.Join(b.TempDir(), "log"))
			switch {
			case err == nil:
				as[i] = a
			case k.name == "io_uring" && errors.Is(err, ErrNotSupported):
				b.Logf("io_uring not supported here: %v", err)
			default:
				b.Fatal(err)
			}
		}
		spent := make([]time.Duration, len(as))
		ratios := make([][]float64, len(as)) // per round: os.File's time over this one's
		for r := range b.N {
			round := make([]time.Duration, len(as))
			for j := range as {
				i := (r + j) % len(as) // each round starts with the next one
				a := as[i]
				if a == nil {
					continue
				}
				start := time.Now()
				for range turn {
					if err := a.append(rec); err != nil {
						b.Fatal(err)
					}
				}
				round[i] = time.Since(start)
				spent[i] += round[i]
			}
			for i := range as {
				if as[i] != nil {
					ratios[i] = append(ratios[i], round[0].Seconds()/round[i].Seconds())
				}
			}
		}
		b.StopTimer()
		for i, a := range as {
			if a == nil {
				continue
			}
			a.close()
			b.ReportMetric(float64(b.N*turn)/spent[i].Seconds(), kinds[i].name+"-records/s")
			if i > 0 {
				// The median of the rounds' ratios: a round where the
				// disk stalled for one of them does not sway it.
				b.ReportMetric(stats.Median(ratios[i]), kinds[i].name+"/os.File")
			}
		}
	})
}

// openAppender opens kind in a new directory, or skips b for io_uring
// where it cannot run.
func openAppender(b *testing.B, kind string, open func(string) (appender, error)) appender {
	b.Helper()
	a, err := open(filepath.Join(b.TempDir(), "log"))
	if err != nil {
		if kind == "io_uring" && errors.Is(err, ErrNotSupported) {
			b.Skipf("io_uring not supported here: %v", err)
		}
		b.Fatal(err)
	}
	return a
}

// logEngines are the engines a Log test runs with: io_uring only where
// the probe says it can run (and the skip says why not).
func logEngines(t *testing.T) []string {
	t.Helper()
	if err := uringWritable(); err != nil {
		t.Logf("io_uring not tested: %v", err)
		return []string{"pwrite"}
	}
	return []string{"pwrite", "io_uring"}
}

// logRecord is writer w's record i: its size varies with both, from 16
// bytes to over 4 KiB, and its first 16 bytes say whose it is.
func logRecord(w, i int) []byte {
	n := 16 + (w*131+i*7919)%6000
	if (w+i)%17 == 0 {
		n = 16
	}
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(w*7 + i*13 + j)
	}
	binary.LittleEndian.PutUint64(b, uint64(w))
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	return b
}

// replayAll returns every record of l.
func replayAll(t *testing.T, l *Log) [][]byte {
	t.Helper()
	var recs [][]byte
	if err := l.Replay(func(rec []byte) error { recs = append(recs, bytes.Clone(rec)); return nil }); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return recs
}

// readLogAll returns every record of the file at path.
func readLogAll(t *testing.T, path string) [][]byte {
	t.Helper()
	var recs [][]byte
	if err := ReadLog(path, func(rec []byte) error { recs = append(recs, bytes.Clone(rec)); return nil }); err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	return recs
}

func TestLogRoundTrip(t *testing.T) {
	testenv.CheckFDs(t)
	for _, e := range append(logEngines(t), "auto") {
		t.Run(e, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wal")
			var opts []Option
			if e != "auto" {
				opts = append(opts, WithEngine(e))
			}
			l, err := OpenLog(path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if c := l.Choice(); (e != "auto" && c.Engine != e) || c.Workers != 1 || c.Reason == "" {
				t.Errorf("Choice %+v", c)
			}
			ctx := context.Background()
			const n = 40
			var bytesIn int64
			for i := range n {
				if err := l.Append(ctx, logRecord(1, i)); err != nil {
					t.Fatal(err)
				}
				bytesIn += int64(len(logRecord(1, i)))
			}
			st := l.Stats()
			if st.Records != n || st.Bytes != bytesIn || st.Commits != n || st.Writes < n || st.Truncated != 0 {
				t.Errorf("Stats %+v after %d lone Appends of %d bytes", st, n, bytesIn)
			}
			got := replayAll(t, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			for name, recs := range map[string][][]byte{"Replay": got, "ReadLog": readLogAll(t, path)} {
				if len(recs) != n {
					t.Fatalf("%s: %d records, want %d", name, len(recs), n)
				}
				for i, r := range recs {
					if !bytes.Equal(r, logRecord(1, i)) {
						t.Fatalf("%s: record %d differs", name, i)
					}
				}
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(16) + bytesIn + n*LogHeaderLen; fi.Size() != want {
				t.Errorf("file of %d bytes, want %d", fi.Size(), want)
			}
			// Reopened, it appends after what is there.
			l, err = OpenLog(path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(ctx, []byte("more")); err != nil {
				t.Fatal(err)
			}
			recs := replayAll(t, l)
			l.Close()
			if len(recs) != n+1 || string(recs[n]) != "more" {
				t.Fatalf("reopened: %d records", len(recs))
			}
		})
	}
}

// The torn tail at every byte of the last record, cut off or zeroed, is
// truncated when the log opens again, and the records before it stay.
func TestLogTornTail(t *testing.T) {
	testenv.CheckFDs(t)
	path := filepath.Join(t.TempDir(), "wal")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := l.Append(ctx, logRecord(2, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	fi, _ := os.Stat(path)
	kept := fi.Size()
	if err := l.Append(ctx, []byte(strings.Repeat("the last record, torn. ", 4))); err != nil {
		t.Fatal(err)
	}
	l.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for cut := kept; cut < int64(len(whole)); cut++ {
		for _, zeros := range []bool{false, true} {
			b := whole[:cut]
			if zeros {
				b = bytes.Clone(whole)
				clear(b[cut:])
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := OpenLog(path)
			if err != nil {
				t.Fatalf("cut at %d (zeros %v): %v", cut, zeros, err)
			}
			recs := replayAll(t, l)
			st := l.Stats()
			l.Close()
			if len(recs) != 3 || st.Truncated != int64(len(b))-kept {
				t.Fatalf("cut at %d (zeros %v): %d records, %d bytes truncated; want 3 and %d", cut, zeros, len(recs), st.Truncated, int64(len(b))-kept)
			}
			for i, r := range recs {
				if !bytes.Equal(r, logRecord(2, i+1)) {
					t.Fatalf("cut at %d: record %d differs", cut, i)
				}
			}
			if fi, _ := os.Stat(path); fi.Size() != kept {
				t.Fatalf("cut at %d: %d bytes after OpenLog, want %d", cut, fi.Size(), kept)
			}
		}
	}
}

// A damaged record followed by good ones of later commits is ErrCorrupt
// naming the path and the offset, from OpenLog and ReadLog, and the file
// is left as it is.
func TestLogCorruptMiddle(t *testing.T) {
	testenv.CheckFDs(t)
	path := filepath.Join(t.TempDir(), "wal")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	off := int64(16)
	for i := range 5 {
		r := logRecord(3, i+1)
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
		off += LogHeaderLen + int64(len(r))
	}
	l.Close()
	whole, _ := os.ReadFile(path)
	for _, i := range []int{0, 2, 3} {
		b := bytes.Clone(whole)
		b[offs[i]+LogHeaderLen] ^= 0x10 // the payload's first byte
		os.WriteFile(path, b, 0o600)
		for name, err := range map[string]error{
			"OpenLog": func() error {
				l, err := OpenLog(path)
				if err == nil {
					l.Close()
				}
				return err
			}(),
			"ReadLog": ReadLog(path, func([]byte) error { return nil }),
		} {
			want := fmt.Sprintf("offset %d", offs[i])
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) ||
				!strings.HasPrefix(err.Error(), "iopath: ") {
				t.Fatalf("%s with record %d damaged: %v; want ErrCorrupt naming %s and %s", name, i, err, path, want)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != path {
				t.Fatalf("%s: %v is not an *fs.PathError for %s", name, err, path)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
			t.Fatalf("record %d damaged: the file changed", i)
		}
	}
}

// Many goroutines append at once: every record is there once, each
// writer's in its order, and commits were shared.
func TestLogConcurrentAppends(t *testing.T) {
	testenv.CheckFDs(t)
	for _, e := range logEngines(t) {
		t.Run(e, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wal")
			l, err := OpenLog(path, WithEngine(e), WithBatchBytes(64<<10))
			if err != nil {
				t.Fatal(err)
			}
			const writers, each = 16, 60
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						if err := l.Append(context.Background(), logRecord(w, i)); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			// Replays and Stats while appending.
			for range 3 {
				replayAll(t, l)
				l.Stats()
			}
			wg.Wait()
			st := l.Stats()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if st.Records != writers*each || st.Commits >= st.Records {
				t.Errorf("Stats %+v: want %d records in fewer commits", st, writers*each)
			}
			next := make([]int, writers)
			for _, r := range readLogAll(t, path) {
				w, i := whose(t, r, writers, each)
				if i != next[w] {
					t.Fatalf("writer %d: record %d after %d", w, i, next[w]-1)
				}
				next[w]++
			}
			for w, n := range next {
				if n != each {
					t.Fatalf("writer %d: %d records, want %d", w, n, each)
				}
			}
		})
	}
}

// whose finds which writer's record r is, and checks its bytes.
func whose(t *testing.T, r []byte, writers, each int) (int, int) {
	t.Helper()
	if len(r) >= 16 {
		w, i := int(binary.LittleEndian.Uint64(r)), int(binary.LittleEndian.Uint64(r[8:]))
		if w < writers && i < each && bytes.Equal(r, logRecord(w, i)) {
			return w, i
		}
	}
	t.Fatalf("a record of %d bytes that no writer wrote", len(r))
	return 0, 0
}

// holdCommits makes the commits of the log at path wait until release
// is closed; started is told of each commit as it starts.
func holdCommits(t *testing.T, path string) (started chan struct{}, release chan struct{}) {
	t.Helper()
	started, release = make(chan struct{}, 100), make(chan struct{})
	wal.TestHookCommit = func(p string, _ int, _ []byte, _ int64) (bool, error) {
		if p == path {
			started <- struct{}{}
			<-release
		}
		return false, nil
	}
	t.Cleanup(func() { wal.TestHookCommit = nil })
	return started, release
}

// Close commits what is queued before it closes; Appends after it fail
// with ErrClosed.
func TestLogCloseFlushes(t *testing.T) {
	testenv.CheckFDs(t)
	for _, e := range logEngines(t) {
		t.Run(e, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wal")
			l, err := OpenLog(path, WithEngine(e))
			if err != nil {
				t.Fatal(err)
			}
			started, release := holdCommits(t, path)
			ctx := context.Background()
			errs := make(chan error, 10)
			go func() { errs <- l.Append(ctx, logRecord(0, 0)) }()
			<-started // the first commit is held: the rest queue behind it
			for i := 1; i < 10; i++ {
				go func() { errs <- l.Append(ctx, logRecord(0, i)) }()
			}
			waitFor(t, func() bool { return queued(l) == 9 })
			closed := make(chan error)
			go func() { closed <- l.Close() }()
			waitFor(t, l.w.Closing)
			if err := l.Append(ctx, []byte("late")); !errors.Is(err, ErrClosed) {
				t.Fatalf("Append while Close waits: %v", err)
			}
			close(release)
			if err := <-closed; err != nil {
				t.Fatalf("Close: %v", err)
			}
			for range 10 {
				if err := <-errs; err != nil {
					t.Fatalf("a queued Append: %v", err)
				}
			}
			err = l.Append(ctx, nil)
			var pe *fs.PathError
			if !errors.Is(err, ErrClosed) || !errors.Is(err, fs.ErrClosed) || !errors.As(err, &pe) || pe.Path != path {
				t.Fatalf("Append after Close: %v", err)
			}
			if err := l.Replay(func([]byte) error { return nil }); !errors.Is(err, ErrClosed) {
				t.Fatalf("Replay after Close: %v", err)
			}
			if n := len(readLogAll(t, path)); n != 10 {
				t.Fatalf("%d records after Close, want 10", n)
			}
		})
	}
}

// queued is the number of records waiting for the next commit.
func queued(l *Log) int { return l.w.Queued() }

// waitFor waits up to 10 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLogContext(t *testing.T) {
	testenv.CheckFDs(t)
	path := filepath.Join(t.TempDir(), "wal")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(nil, nil); err != ErrNilContext {
		t.Fatalf("nil ctx: %v", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Append(cancelled, []byte("never")); err != context.Canceled {
		t.Fatalf("cancelled ctx: %v", err)
	}
	// Cancelled while the record waits for a commit: Append returns at
	// once, and the record is committed anyway.
	started, release := holdCommits(t, path)
	first := make(chan error)
	go func() { first <- l.Append(context.Background(), []byte("first")) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error)
	go func() { second <- l.Append(ctx, []byte("second")) }()
	waitFor(t, func() bool { return queued(l) == 1 })
	cancel()
	if err := <-second; err != context.Canceled {
		t.Fatalf("cancelled while queued: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readLogAll(t, path)
	if len(recs) != 2 || string(recs[0]) != "first" || string(recs[1]) != "second" {
		t.Fatalf("records %q", recs)
	}
}

// A failed fdatasync fails every Append of its commit and every later
// call; reopened, the log keeps what was durable and cuts the torn part
// the failed commit left.
func TestLogFailedCommit(t *testing.T) {
	testenv.CheckFDs(t)
	for _, e := range logEngines(t) {
		t.Run(e, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wal")
			l, err := OpenLog(path, WithEngine(e))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i := range 4 {
				if err := l.Append(ctx, logRecord(4, i)); err != nil {
					t.Fatal(err)
				}
			}
			wal.TestHookCommit = func(p string, fd int, b []byte, off int64) (bool, error) {
				if p != path {
					return false, nil
				}
				// A prefix of the batch reaches the file, ending inside
				// a record, and then fdatasync fails.
				sys.Pwrite(fd, b[:len(b)-1], off)
				return true, &fs.PathError{Op: "fdatasync", Path: path, Err: syscall.EIO}
			}
			defer func() { wal.TestHookCommit = nil }()
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() { errs[i] = l.Append(ctx, logRecord(5, i)) })
			}
			wg.Wait()
			for i, err := range errs {
				if !errors.Is(err, syscall.EIO) || !strings.HasPrefix(err.Error(), "iopath: fdatasync "+path) {
					t.Fatalf("Append %d of the failed commit: %v", i, err)
				}
			}
			if err := l.Append(ctx, nil); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Append after the failure: %v", err)
			}
			if err := l.Close(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Close after the failure: %v", err)
			}
			wal.TestHookCommit = nil
			l, err = OpenLog(path, WithEngine(e))
			if err != nil {
				t.Fatal(err)
			}
			recs := replayAll(t, l)
			st := l.Stats()
			l.Close()
			if len(recs) < 4 || st.Truncated == 0 {
				t.Fatalf("reopened: %d records, %d bytes truncated", len(recs), st.Truncated)
			}
			for i, r := range recs {
				if i < 4 && !bytes.Equal(r, logRecord(4, i)) {
					t.Fatalf("durable record %d differs", i)
				}
				if i >= 4 {
					whose(t, r, 6, 8) // a whole record of the failed commit, never acknowledged
				}
			}
		})
	}
}

func TestLogOptions(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(dir, "perm")
	l, err := OpenLog(path, WithPerm(0o644))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 whatever the umask", fi.Mode())
	}
	path = filepath.Join(dir, "default")
	l, err = OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := l.Append(ctx, make([]byte, MaxLogRecord+1)); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a record over MaxLogRecord: %v", err)
	}
	if err := l.Append(ctx, nil); err != nil {
		t.Errorf("an empty record: %v", err)
	}
	l.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
	if recs := readLogAll(t, path); len(recs) != 1 || len(recs[0]) != 0 {
		t.Errorf("records %q, want one empty", recs)
	}
	for _, bad := range [][]Option{
		{WithBatchBytes(-1)}, {WithBatchBytes(MaxBatchBytes + 1)}, {WithBatchWait(2 * time.Second)},
		{WithWorkers(2)}, {WithEngine("pread")}, {WithKeepOwner()}, {WithPerm(0o1000)},
	} {
		if l, err := OpenLog(filepath.Join(dir, "bad"), bad...); err == nil {
			l.Close()
			t.Errorf("options %v accepted", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("bad options created the file: %v", err)
	}
}

// WithBatchBytes bounds a commit; a record larger than it goes alone;
// WithBatchWait gathers more.
func TestLogBatchBounds(t *testing.T) {
	testenv.CheckFDs(t)
	path := filepath.Join(t.TempDir(), "wal")
	var sizes []int
	var mu sync.Mutex
	wal.TestHookCommit = func(p string, _ int, b []byte, _ int64) (bool, error) {
		if p == path {
			mu.Lock()
			sizes = append(sizes, len(b))
			mu.Unlock()
		}
		return false, nil
	}
	defer func() { wal.TestHookCommit = nil }()
	const batch = 8 << 10
	l, err := OpenLog(path, WithBatchBytes(batch), WithBatchWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 6 {
				if err := l.Append(context.Background(), make([]byte, 1000+w*10+i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Append(context.Background(), make([]byte, 3*batch)); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	l.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range sizes[:len(sizes)-1] {
		if n > batch {
			t.Fatalf("a commit of %d bytes, over the %d bound", n, batch)
		}
	}
	if last := sizes[len(sizes)-1]; last != 3*batch+LogHeaderLen {
		t.Fatalf("the big record's commit: %d bytes", last)
	}
	if st.Records != 49 || st.Commits > 20 {
		t.Fatalf("Stats %+v: want 49 records in at most 20 commits (8 KiB batches of ~1 KiB records, gathered)", st)
	}
}

func TestLogNotALog(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("dear diary, today I nearly lost this file to a log library\n"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want error
	}{
		{text, ErrCorrupt}, {fifo, ErrNotRegular}, {dir, syscall.EISDIR},
		{filepath.Join(dir, "missing", "wal"), fs.ErrNotExist},
	} {
		l, err := OpenLog(c.path)
		if err == nil {
			l.Close()
		}
		rerr := ReadLog(c.path, func([]byte) error { return nil })
		for name, err := range map[string]error{"OpenLog": err, "ReadLog": rerr} {
			var pe *fs.PathError
			if !errors.Is(err, c.want) || !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "iopath: ") {
				t.Errorf("%s %s: %v; want an *fs.PathError wrapping %v", name, c.path, err, c.want)
			}
		}
	}
	if b, _ := os.ReadFile(text); !strings.HasPrefix(string(b), "dear diary") {
		t.Errorf("the text file changed: %q", b)
	}
	// A second Log of the same file, in this process or another, is
	// refused while the first is open.
	path := filepath.Join(dir, "wal")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if l2, err := OpenLog(path); err == nil || !strings.Contains(err.Error(), "another") {
		if err == nil {
			l2.Close()
		}
		t.Errorf("a second OpenLog: %v", err)
	}
	l.Close()
	if l2, err := OpenLog(path); err != nil {
		t.Errorf("OpenLog after Close: %v", err)
	} else {
		l2.Close()
	}
	// fn's error comes back as it is, and nil fn is ErrNilFunc.
	stop := errors.New("stop")
	l, _ = OpenLog(path)
	l.Append(context.Background(), []byte("x"))
	if err := l.Replay(func([]byte) error { return stop }); err != stop {
		t.Errorf("Replay: %v, want fn's error", err)
	}
	if err := l.Replay(nil); err != ErrNilFunc {
		t.Errorf("Replay(nil): %v", err)
	}
	l.Close()
	if err := ReadLog(path, func([]byte) error { return stop }); err != stop {
		t.Errorf("ReadLog: %v, want fn's error", err)
	}
}

// io_uring refused: WithEngine("io_uring") fails with ErrNotSupported and
// the reason; Auto, even steered to io_uring, commits with pwrite and
// says why; Plan answers the same.
func TestLogUringUnavailable(t *testing.T) {
	testenv.CheckFDs(t)
	t.Setenv(features.DisableEnv, "1")
	path := filepath.Join(t.TempDir(), "wal")
	_, err := OpenLog(path, WithEngine("io_uring"))
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), features.DisableEnv) {
		t.Fatalf("WithEngine(io_uring): %v; want ErrNotSupported naming %s", err, features.DisableEnv)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused OpenLog created the file")
	}
	if _, err := Plan(path, ForLog, WithEngine("io_uring")); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Plan: %v", err)
	}
	t.Setenv(auto.EnvEngine, "io_uring")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := l.Choice()
	if c.Engine != "pwrite" || !strings.Contains(c.Reason, features.DisableEnv) || !strings.Contains(c.Reason, auto.EnvEngine) {
		t.Errorf("Choice %+v: want pwrite, saying why io_uring was not used", c)
	}
	if p, err := Plan(path, ForLog); err != nil || p != c {
		t.Errorf("Plan %+v, %v; OpenLog chose %+v", p, err, c)
	}
	if err := l.Append(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// Under seccomp filters that forbid each io_uring call (the probe run
// before the filter, so that Auto, steered to io_uring, tries a ring):
// the explicit choice fails with ErrNotSupported naming the call, Auto
// falls back to pwrite at start and says why, nothing leaks.
func TestLogUringForbidden(t *testing.T) {
	requireUring(t)
	for _, call := range seccomptest.Calls() {
		t.Run(call, func(t *testing.T) {
			t.Parallel() // each runs in a process of its own
			seccomptest.Run(t, "TestLogUringForbiddenChild", nil, "IOPATH_TEST_DENY_LATER="+call)
		})
	}
}

func TestLogUringForbiddenChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestLogUringForbidden: runs only in its child process")
	}
	call := os.Getenv("IOPATH_TEST_DENY_LATER")
	if u := features.Probe().IOURing; !u.Available {
		t.Fatalf("io_uring unavailable before the filter: %s", u.Reason)
	}
	if err := seccomptest.Deny(call); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wal")
	before := testenv.OpenFDs(t)
	// Auto, steered to io_uring by a probe that still says yes, tries a
	// ring, is refused, and commits with pwrite.
	t.Setenv(auto.EnvEngine, "io_uring")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Choice: %v", l.Choice())
	if c := l.Choice(); c.Engine != "pwrite" || !strings.Contains(c.Reason, "could not start") || !strings.Contains(c.Reason, call) {
		t.Errorf("Choice %+v: want pwrite, naming %s", c, call)
	}
	if err := l.Append(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The refusal is remembered: the explicit choice fails before the
	// file is touched.
	_, err = OpenLog(path, WithEngine("io_uring"))
	t.Logf("WithEngine: %v", err)
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), call) {
		t.Fatalf("WithEngine(io_uring) with %s forbidden: %v; want ErrNotSupported naming it", call, err)
	}
	if recs := readLogAll(t, path); len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if after := testenv.OpenFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
}

// Logs opened and closed many times, and OpenLogs that fail at each
// step, leave no descriptor, goroutine or lock behind.
func TestLogLeaks(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "wal")
	before := runtime.NumGoroutine()
	for _, e := range logEngines(t) {
		for i := range 20 {
			l, err := OpenLog(path, WithEngine(e), WithBatchBytes(4096*(1+i%3)))
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if err := l.Append(context.Background(), logRecord(i, 0)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("no log here, and more than a header's bytes"), 0o600)
	for _, p := range []string{bad, filepath.Join(dir, "no", "wal"), dir} {
		if l, err := OpenLog(p); err == nil {
			l.Close()
			t.Fatalf("OpenLog %s succeeded", p)
		}
	}
	// Plan says what OpenLog would, without creating anything.
	if _, err := Plan(filepath.Join(dir, "no", "wal"), ForLog); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Plan in a missing directory: %v", err)
	}
	if _, err := Plan(dir, ForLog); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Plan of a directory: %v", err)
	}
	if c, err := Plan(filepath.Join(dir, "new"), ForLog); err != nil || c.Engine != "pwrite" || c.Rule != ruleLog {
		t.Errorf("Plan of a new log: %+v, %v", c, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Plan created the file")
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}
