package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// readPaths reads paths with e and returns each file's bytes (copied) or
// error.
func readPaths(t *testing.T, e Engine, job Job) (map[string][]byte, map[string]error) {
	t.Helper()
	data, errs := map[string][]byte{}, map[string]error{}
	var mu sync.Mutex
	_, err := Read(context.Background(), e, job, func(f *File) error {
		mu.Lock()
		defer mu.Unlock()
		if f.Err != nil {
			errs[f.Path] = f.Err
		} else {
			data[f.Path] = bytes.Clone(f.Data)
		}
		return nil
	})
	skipUnsupported(t, e, err)
	if err != nil {
		t.Fatal(err)
	}
	return data, errs
}

// sleeper starts a process that sleeps, so that its /proc files hold
// still while they are compared.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Let it reach its sleep: until then its mappings change.
	for range 100 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "S" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd.Process.Pid
}

// TestPseudoFilesComplete: files of pseudo-filesystems, whose sizes mean
// nothing (0 for procfs, 4096 for sysfs) and whose reads end short after
// about a page (seq_file), come back whole from every engine, as
// os.ReadFile reads them (until a read returns 0). A sleeping process's
// smaps is several pages (raw used to deliver its first page as the whole
// file, io_uring its first two). Named directly, and through a symlink
// found by a walk.
func TestPseudoFilesComplete(t *testing.T) {
	pid := sleeper(t)
	smaps := fmt.Sprintf("/proc/%d/smaps", pid)
	named := []string{
		smaps,
		fmt.Sprintf("/proc/%d/status", pid),
		fmt.Sprintf("/proc/%d/maps", pid),
		"/proc/cpuinfo",
		"/sys/kernel/mm/transparent_hugepage/enabled",
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "smaps")
	if err := os.Symlink(smaps, link); err != nil {
		t.Fatal(err)
	}
	if n, _ := readOnce(smaps); true {
		all, err := os.ReadFile(smaps)
		if err != nil || n >= len(all) {
			t.Fatalf("%s: one read gives %d bytes of %d (%v): a file that takes one read tests nothing", smaps, n, len(all), err)
		}
	}
	for _, e := range testEngines(t) {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/workers=%d", e.Name(), workers), func(t *testing.T) {
				warm(t)
				noLeaks(t)
				data, errs := readPaths(t, e, Job{Paths: append([]string{dir}, named...), Workers: workers})
				for _, p := range append(named, link) {
					from := p
					if p == link {
						from = smaps
					}
					w, werr := os.ReadFile(from)
					if werr != nil {
						continue // not here
					}
					if errs[p] != nil {
						t.Errorf("%s: %v", p, errs[p])
						continue
					}
					if strings.HasSuffix(from, "/smaps") || strings.HasSuffix(from, "/status") {
						// Pss changes as other processes map or
						// unmap the pages it shares, SigQ as
						// signals to the user's processes come
						// and go: same lines, same keys.
						if g, w := smapsShape(data[p]), smapsShape(w); g != w {
							t.Errorf("%s: %d bytes, %d lines, want %d like the %d os.ReadFile reads", p, len(data[p]), strings.Count(g, "\n"), strings.Count(w, "\n"), len(w))
						}
					} else if !bytes.Equal(data[p], w) {
						t.Errorf("%s: %d bytes, want the %d os.ReadFile reads", p, len(data[p]), len(w))
					}
				}
			})
		}
	}
}

// readOnce is one read of up to 64 KiB of path.
func readOnce(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Read(make([]byte, 64<<10))
}

// TestFeedMarksPseudo: the feed marks the files of pseudo-filesystems,
// named or walked (symlinks by their target), and no others.
func TestFeedMarksPseudo(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]int{"a": 10, "sub/b": 10})
	if err := os.Symlink("/proc/self/status", filepath.Join(dir, "status")); err != nil {
		t.Fatal(err)
	}
	got := func(job Job) map[string]bool {
		f := newFeed(context.Background(), &job)
		defer f.stop()
		m := map[string]bool{}
		for {
			chunk, ok := f.next()
			if !ok {
				return m
			}
			for _, it := range chunk {
				m[it.path] = it.unsized
			}
		}
	}
	named := got(Job{Paths: []string{"/proc/self/status", "/proc/cpuinfo", filepath.Join(dir, "a"), "/sys/kernel/mm/transparent_hugepage/enabled", filepath.Join(dir, "sub/b"), "/proc/self/maps"}})
	walked := got(Job{Paths: []string{dir, "/proc/sys/kernel/random"}, walk: true})
	for _, c := range []struct {
		m    map[string]bool
		path string
		want bool
	}{
		{named, "/proc/self/status", true},
		{named, "/proc/cpuinfo", true},
		{named, filepath.Join(dir, "a"), false},
		{named, "/sys/kernel/mm/transparent_hugepage/enabled", true},
		{named, filepath.Join(dir, "sub/b"), false},
		{named, "/proc/self/maps", true},
		{walked, filepath.Join(dir, "a"), false},
		{walked, filepath.Join(dir, "sub/b"), false},
		{walked, filepath.Join(dir, "status"), true},
		{walked, "/proc/sys/kernel/random/boot_id", true},
	} {
		if u, ok := c.m[c.path]; !ok {
			t.Errorf("%s: not fed", c.path)
		} else if u != c.want {
			t.Errorf("%s: unsized %v, want %v", c.path, u, c.want)
		}
	}
}

// smapsShape is smaps (or status) without its figures: each mapping's
// header line, and the key of each line under it.
func smapsShape(b []byte) string {
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if i := strings.IndexByte(line, ':'); i > 0 && i < 25 {
			line = line[:i] + "\n"
		}
		out.WriteString(line)
	}
	return out.String()
}

// TestPseudoLimit: /proc/self/pagemap says size 0 and goes on for the
// whole address space (256 GiB here): every engine stops at the limit
// with that file's error wrapping ErrLimit, which says how to raise it,
// soon and with memory bounded by the limit; the other files are read.
func TestPseudoLimit(t *testing.T) {
	if _, err := os.Stat("/proc/self/pagemap"); err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	small := filepath.Join(t.TempDir(), "small")
	if err := os.WriteFile(small, []byte("small"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, e := range testEngines(t) {
		for _, limit := range []int64{100, 1 << 20, 0} {
			if limit == 0 && e.Name() != "io_uring" {
				// The default (64 MiB of pagemap, seconds under the race
				// detector) comes from Job.pseudoLimit for every engine:
				// checked once.
				continue
			}
			t.Run(fmt.Sprintf("%s/limit=%d", e.Name(), limit), func(t *testing.T) {
				warm(t)
				noLeaks(t)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				data, errs := readPaths(t, e, Job{Paths: []string{"/proc/self/pagemap", small, "/proc/self/status"}, PseudoLimit: limit})
				d := time.Since(start)
				runtime.ReadMemStats(&after)
				err := errs["/proc/self/pagemap"]
				if !errors.Is(err, ErrLimit) {
					t.Fatalf("pagemap: %d bytes, error %v; want an error wrapping ErrLimit", len(data["/proc/self/pagemap"]), err)
				}
				if !isPathErr(err, "/proc/self/pagemap") || !strings.Contains(err.Error(), "WithPseudoLimit") {
					t.Errorf("error %q: want an *fs.PathError naming the file and saying how to raise the limit", err)
				}
				if string(data[small]) != "small" {
					t.Errorf("the other file: %q, %v", data[small], errs[small])
				}
				// status is about 1.4 KiB, read in one go and ended by
				// a read of 0: over a limit of 100, under the others.
				if serr := errs["/proc/self/status"]; (limit == 100) != errors.Is(serr, ErrLimit) || limit != 100 && serr != nil {
					t.Errorf("/proc/self/status under a limit of %d: %d bytes, %v", limit, len(data["/proc/self/status"]), serr)
				}
				eff := limit
				if eff == 0 {
					eff = 64 << 20
				}
				// A hang guard, not a measurement: unbounded, the read
				// would run until memory runs out.
				if d > time.Minute {
					t.Errorf("took %v", d)
				}
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*eff+8<<20) {
					t.Errorf("allocated %d MiB for a limit of %d bytes", alloc>>20, eff)
				}
			})
		}
	}
}
