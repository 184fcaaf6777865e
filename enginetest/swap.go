package enginetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// SwapSizes are the sizes of the versions a Swap renames into place: one
// page, exactly batch's default first-read buffer (64 KiB), one byte more,
// 200 KiB, and 1 MiB + 3 — the boundaries at which a reader's first read,
// its follow-up reads and its shares of blocks change.
var SwapSizes = []int{4 << 10, 64 << 10, 64<<10 + 1, 200 << 10, 1<<20 + 3}

// EnvLongTests set to 1 makes every replace-while-reading case read for
// SwapBudget's long time instead of half a second: a soak run, for races
// rarer than those these tests were written for.
const EnvLongTests = "IOPATH_LONG_TESTS"

// SwapBudget is how long one replace-while-reading case reads: 500 ms, or
// 60 s with IOPATH_LONG_TESTS=1.
//
// The bugs these tests were written for (batch's io_uring engine sizing a
// file by path and reopening it, the read engine's second worker opening
// the path again, Auto choosing io_uring for cold files) gave their first
// wrong result within 260 ms in every one of 45 runs of each case under
// -race, 10 of them with another process spinning on one of the two
// CPUs, and mostly within 60 ms: half a second catches each of them in
// every run, and the many cases keep `go test -race ./...` within CI's
// time.
func SwapBudget() time.Duration {
	if os.Getenv(EnvLongTests) == "1" {
		return 60 * time.Second
	}
	return 500 * time.Millisecond
}

// Swap keeps one path holding one complete version of a file at every
// moment while replacing it, in a loop, by the next of several versions of
// distinct sizes, each renamed into place atomically (a hard link of the
// version, renamed over the path: the path's inode changes at each step,
// as with an editor or a deploy tool that writes a file and renames it).
// Every 8-byte word of a version holds the version's number and the
// word's offset, so that a result that is not exactly one version — a
// prefix of one, or one version's head followed by another's tail — shows,
// and its description says which bytes came from which version.
//
// A reader that is correct under the rule "all reads of one file go
// through one descriptor, or check that each descriptor is the same file"
// returns, for every read of Path, one complete version and no error.
type Swap struct {
	// Path is the path being replaced. Only Path is read: the versions
	// live in another directory of the same filesystem.
	Path string
	// Cold drops each version from the page cache (posix_fadvise
	// DONTNEED) just before it is renamed into place, so that readers
	// wait for the disk. Set it before Start.
	Cold bool
	// Allow, when set, accepts the errors it returns true for: Hammer
	// counts them in SwapResult.Allowed instead of failing the test. Only
	// a reader that genuinely cannot tell (one that must open the path a
	// second time and finds another file there) may need it.
	Allow func(err error) bool
	// Gaps removes the path before every other rename, so that it is
	// missing now and then, as in a tree whose files are deleted and
	// made again: a reader may then fail to open it (an error wrapping
	// fs.ErrNotExist, which Hammer accepts), but a file it opened it
	// must read whole, though the path it opened may be gone by the
	// time it asks anything more of it. Set it before Start.
	Gaps bool
	// Budget, when set, is how long Hammer reads instead of SwapBudget():
	// a suite with many cases may give each a share.
	Budget time.Duration

	vers    [][]byte
	masters []string
	tmp     string

	stop    chan struct{}
	done    chan struct{}
	swaps   atomic.Int64
	loopErr error
}

// NewSwap writes one version per size (SwapSizes when none are given) in a
// temporary directory and renames the first into place at s.Path. Sizes
// must be distinct: a result is matched to a version by its length first.
func NewSwap(t testing.TB, sizes ...int) *Swap {
	t.Helper()
	if len(sizes) == 0 {
		sizes = SwapSizes
	}
	dir := t.TempDir()
	vdir := filepath.Join(dir, "versions")
	if err := os.Mkdir(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Swap{Path: filepath.Join(dir, "file"), tmp: filepath.Join(vdir, "next")}
	seen := map[int]bool{}
	for v, size := range sizes {
		if seen[size] {
			t.Fatalf("NewSwap: size %d given twice", size)
		}
		seen[size] = true
		data := swapVersion(v, size)
		p := filepath.Join(vdir, fmt.Sprintf("v%d", v))
		if err := writeSynced(p, data); err != nil {
			t.Fatal(err)
		}
		s.vers = append(s.vers, data)
		s.masters = append(s.masters, p)
	}
	if err := s.step(0); err != nil {
		t.Fatal(err)
	}
	return s
}

// writeSynced writes a file and flushes it to the disk, so that
// POSIX_FADV_DONTNEED can drop its pages (it leaves dirty ones).
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// swapVersion is version v's content: word i (8 bytes, little endian) is
// 0x5a<<56 | v<<40 | i, cut to size bytes.
func swapVersion(v, size int) []byte {
	b := make([]byte, (size+7)&^7)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], 0x5a<<56|uint64(v)<<40|uint64(i/8))
	}
	return b[:size]
}

// step renames version v into place.
func (s *Swap) step(v int) error {
	if s.Cold {
		fd, err := sys.Open(s.masters[v], sys.O_RDONLY)
		if err != nil {
			return err
		}
		err = sys.Fadvise(fd, 0, 0, 4 /* POSIX_FADV_DONTNEED */)
		sys.Close(fd)
		if err != nil {
			return fmt.Errorf("fadvise %s: %w", s.masters[v], err)
		}
	}
	os.Remove(s.tmp)
	if err := os.Link(s.masters[v], s.tmp); err != nil {
		return err
	}
	return os.Rename(s.tmp, s.Path)
}

// Start begins replacing Path in a goroutine, which Stop (or the end of
// the test) ends.
func (s *Swap) Start(t testing.TB) {
	t.Helper()
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		for i := 1; ; i++ {
			select {
			case <-s.stop:
				return
			default:
			}
			if s.Gaps && i%2 == 0 {
				if err := os.Remove(s.Path); err != nil {
					s.loopErr = err
					return
				}
			}
			if err := s.step(i % len(s.vers)); err != nil {
				s.loopErr = err
				return
			}
			s.swaps.Add(1)
		}
	}()
	t.Cleanup(func() { s.Stop(t) })
}

// Stop ends the replacing goroutine and waits for it; it fails the test if
// a rename failed. It returns how many renames were made.
func (s *Swap) Stop(t testing.TB) int64 {
	t.Helper()
	if s.stop == nil {
		return s.swaps.Load()
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	if s.loopErr != nil {
		t.Errorf("replacing %s: %v", s.Path, s.loopErr)
		s.loopErr = nil
	}
	return s.swaps.Load()
}

// Check returns nil when data is exactly one version, else an error that
// describes what it is made of.
func (s *Swap) Check(data []byte) error {
	for _, v := range s.vers {
		if len(v) == len(data) && bytes.Equal(v, data) {
			return nil
		}
	}
	return fmt.Errorf("%d bytes, not one version: %s", len(data), s.describe(data))
}

// describe says which version each run of data's words comes from, and
// where in it: "[0,65536) v3@0 [65536,69632) v1@65536".
func (s *Swap) describe(data []byte) string {
	var b strings.Builder
	start, cur := 0, ""
	flush := func(end int) {
		if end > start {
			fmt.Fprintf(&b, "[%d,%d) %s ", start, end, cur)
		}
	}
	for i := 0; i < len(data); i += 8 {
		w := data[i:min(i+8, len(data))]
		src := "?"
		for v, ver := range s.vers {
			if i+len(w) <= len(ver) && bytes.Equal(ver[i:i+len(w)], w) {
				src = fmt.Sprintf("v%d(%dB)", v, len(ver))
				break
			}
		}
		if src != cur {
			flush(i)
			start, cur = i, src
		}
	}
	flush(len(data))
	for v, ver := range s.vers {
		if len(ver) > len(data) && bytes.Equal(ver[:len(data)], data) {
			fmt.Fprintf(&b, "(a prefix of v%d)", v)
		}
	}
	return strings.TrimSpace(b.String())
}

// SwapResult counts what a Hammer saw.
type SwapResult struct {
	Reads   int64 // results checked
	Torn    int64 // results that were not exactly one version
	Errors  int64 // results that were errors, not counting Allowed ones
	Allowed int64 // errors Swap.Allow accepted
	Swaps   int64 // renames made meanwhile
}

// Hammer starts the replacing, then calls read again and again for
// s.Budget (SwapBudget when 0), and stops the replacing. read reads s.Path (once or many
// times) and hands each result to got, which may be called from several
// goroutines at once and checks data during the call (data may be reused
// afterwards). Every torn result and every error fails the test (the
// first few are described); an error returned by read fails it too.
func (s *Swap) Hammer(t testing.TB, read func(got func(data []byte, err error)) error) SwapResult {
	t.Helper()
	var (
		mu     sync.Mutex
		res    SwapResult
		report []string
	)
	got := func(data []byte, err error) {
		if err == nil {
			err = s.Check(data)
			if err != nil {
				err = fmt.Errorf("torn: %w", err)
			}
			mu.Lock()
			defer mu.Unlock()
			res.Reads++
			if err != nil {
				res.Torn++
			}
		} else {
			allowed := s.Allow != nil && s.Allow(err) || s.Gaps && errors.Is(err, fs.ErrNotExist)
			mu.Lock()
			defer mu.Unlock()
			res.Reads++
			if allowed {
				res.Allowed++
				return
			}
			res.Errors++
		}
		if err != nil && len(report) < 5 {
			report = append(report, err.Error())
		}
	}
	budget := s.Budget
	if budget <= 0 {
		budget = SwapBudget()
	}
	s.Start(t)
	deadline := time.Now().Add(budget)
	var readErr error
	for time.Now().Before(deadline) {
		if readErr = read(got); readErr != nil {
			break
		}
	}
	res.Swaps = s.Stop(t)
	mu.Lock()
	defer mu.Unlock()
	for _, r := range report {
		t.Errorf("%s: %s", s.Path, r)
	}
	if readErr != nil {
		t.Errorf("%s: %v", s.Path, readErr)
	}
	if res.Torn > 0 || res.Errors > 0 {
		t.Errorf("%d of %d results torn, %d errors, in %d renames", res.Torn, res.Reads, res.Errors, res.Swaps)
	} else {
		t.Logf("%d results, all complete versions (%d allowed errors), in %d renames", res.Reads-res.Allowed, res.Allowed, res.Swaps)
	}
	if res.Reads == 0 {
		t.Errorf("no result in %v", budget)
	}
	return res
}
