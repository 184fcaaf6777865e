package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestTreeParseDist(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"4KiB", "4KiB"},
		{"4k", "4KiB"},
		{"1", "1B"},
		{" 1KiB-64KiB ", "1KiB-64KiB"},
		{"1k-1k", "1KiB-1KiB"},
		{"100-4097", "100B-4097B"},
		{"lognormal", "lognormal:8KiB"},
		{"LogNormal:11KiB", "lognormal:11KiB"},
		{"lognormal:1", "lognormal:1B"},
		{"lognormal:16MiB", "lognormal:16MiB"},
	} {
		d, err := ParseDist(tc.in)
		if err != nil {
			t.Errorf("ParseDist(%q): %v", tc.in, err)
			continue
		}
		if d.String() != tc.want {
			t.Errorf("ParseDist(%q) = %s, want %s", tc.in, d, tc.want)
		}
		if d2, err := ParseDist(d.String()); err != nil || d2 != d {
			t.Errorf("ParseDist(%q) = %v, %v: does not round-trip", d.String(), d2, err)
		}
	}
	for _, in := range []string{
		"", "0", "lots", "-1", "4k-", "-4k", "64k-1k", "0-4k", "1k-2k-3k",
		"lognormal:", "lognormal:0", "lognormal:17MiB", "lognormalx", "lognormal:abc", "1e30",
	} {
		if d, err := ParseDist(in); err == nil {
			t.Errorf("ParseDist(%q) = %s, want an error", in, d)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseDist(%q): error %q is not one line", in, err)
		}
	}
}

func TestTreeDistSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fixed := FixedSize(4097)
	for range 1000 {
		if n := fixed.Sample(r); n != 4097 {
			t.Fatalf("fixed 4097 gave %d", n)
		}
	}

	uni := UniformSize(1000, 1010)
	seen := map[int64]bool{}
	for range 5000 {
		n := uni.Sample(r)
		if n < 1000 || n > 1010 {
			t.Fatalf("uniform [1000, 1010] gave %d", n)
		}
		seen[n] = true
	}
	if len(seen) != 11 {
		t.Errorf("uniform [1000, 1010] gave %d distinct sizes in 5000 draws, want all 11", len(seen))
	}

	for _, median := range []int64{11 << 10, 1 << 20} {
		d := LogNormalSize(median)
		draws := make([]int64, 5000)
		for i := range draws {
			draws[i] = d.Sample(r)
			if draws[i] < 1 || draws[i] > MaxLogNormalSize {
				t.Fatalf("lognormal draw %d out of [1, %d]", draws[i], MaxLogNormalSize)
			}
		}
		slices.Sort(draws)
		got := draws[len(draws)/2]
		if got < median*8/10 || got > median*12/10 {
			t.Errorf("lognormal:%d: median of 5000 draws %d, want within 20%%", median, got)
		}
		// σ: the quartiles lie about a factor exp(0.674σ) from the median.
		q1, q3 := float64(draws[len(draws)/4]), float64(draws[3*len(draws)/4])
		if ratio := q3 / q1; ratio < 3.5 || ratio > 7 {
			t.Errorf("lognormal:%d: interquartile ratio %.2f, want about 5.0", median, ratio)
		}
	}
	// Clamped at both ends.
	big, small := LogNormalSize(MaxLogNormalSize), LogNormalSize(1)
	var clampedHi, clampedLo int
	for range 2000 {
		if n := big.Sample(r); n == MaxLogNormalSize {
			clampedHi++
		} else if n > MaxLogNormalSize || n < 1 {
			t.Fatalf("draw %d out of range", n)
		}
		if n := small.Sample(r); n == 1 {
			clampedLo++
		} else if n < 1 {
			t.Fatalf("draw %d out of range", n)
		}
	}
	if clampedHi < 800 || clampedLo < 800 {
		t.Errorf("clamped %d high and %d low of 2000, want about half each", clampedHi, clampedLo)
	}
}

func TestTreeLayout(t *testing.T) {
	l := newLayout(100_000, 100)
	if l.depth != 2 || l.path(31742) != "03/17/file-31742.dat" || l.path(0) != "00/00/file-00000.dat" ||
		l.path(99_999) != "09/99/file-99999.dat" {
		t.Errorf("100000 files: depth %d, paths %s %s %s", l.depth, l.path(0), l.path(31742), l.path(99_999))
	}
	if l := newLayout(99, 100); l.depth != 0 || l.path(7) != "file-07.dat" {
		t.Errorf("99 files: depth %d, path %s", l.depth, l.path(7))
	}
	// 100 files and the marker do not fit one directory of 100.
	if l := newLayout(100, 100); l.depth != 1 || l.path(99) != "00/file-99.dat" {
		t.Errorf("100 files: depth %d, path %s", l.depth, l.path(99))
	}
	for _, tc := range []struct{ n, fan int }{
		{1, 2}, {2, 2}, {3, 2}, {17, 2}, {1000, 10}, {1001, 10}, {2000, 7}, {12345, 100}, {MaxTreeFiles, 100},
	} {
		l := newLayout(tc.n, tc.fan)
		count := map[string]int{}
		paths := map[string]bool{}
		check := func(i int) {
			p := l.path(i)
			if paths[p] {
				t.Fatalf("n=%d fan=%d: path %s twice", tc.n, tc.fan, p)
			}
			paths[p] = true
			if strings.Count(p, "/") != l.depth {
				t.Fatalf("n=%d fan=%d: %s is not %d deep", tc.n, tc.fan, p, l.depth)
			}
			// Count each entry in its parent once.
			for dir := p; dir != "."; dir = filepath.Dir(dir) {
				key := filepath.Dir(dir) + "\x00" + filepath.Base(dir)
				if count[key] == 0 {
					count[filepath.Dir(dir)]++
				}
				count[key]++
			}
		}
		if tc.n > 20_000 {
			// Too many to list: check the extremes.
			for _, i := range []int{0, 1, tc.fan - 1, tc.fan, tc.n - 1} {
				check(i)
			}
			if top := (tc.n-1)/l.pow[l.depth] + 1; top+1 > tc.fan {
				t.Errorf("n=%d fan=%d: root holds %d entries", tc.n, tc.fan, top+1)
			}
			continue
		}
		for i := range tc.n {
			check(i)
		}
		dirs := 0
		for k, v := range count {
			if strings.Contains(k, "\x00") {
				continue
			}
			if k != "." {
				dirs++
			}
			if k == "." {
				v++ // the marker
			}
			if v > tc.fan {
				t.Errorf("n=%d fan=%d: %s holds %d entries", tc.n, tc.fan, k, v)
			}
		}
		if dirs != l.dirs() {
			t.Errorf("n=%d fan=%d: %d directories, dirs() says %d", tc.n, tc.fan, dirs, l.dirs())
		}
	}
}

// readTree returns every regular file under dir by relative path, and
// fails on anything else but directories.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is %s", path, d.Type())
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func mustTree(t *testing.T, dir string, opts TreeOptions) TreeStats {
	t.Helper()
	st, err := Tree(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestTreeDeterministic(t *testing.T) {
	for _, dist := range []string{"4KiB", "1-20000", "lognormal:3KiB"} {
		t.Run(dist, func(t *testing.T) {
			d, err := ParseDist(dist)
			if err != nil {
				t.Fatal(err)
			}
			n := 2000
			if _, fixed := d.Fixed(); !fixed {
				n = 1000
			}
			opts := TreeOptions{Files: n, Size: d, Seed: 1}
			a, b, c := t.TempDir()+"/a", t.TempDir()+"/b", t.TempDir()+"/c"
			sa, sb := mustTree(t, a, opts), mustTree(t, b, opts)
			checkComplete(t, a, opts)
			opts.Seed = 2
			mustTree(t, c, opts)
			ta, tb, tc := readTree(t, a), readTree(t, b), readTree(t, c)
			if len(ta) != n+1 || sa != sb || sa.Files != n {
				t.Fatalf("%d files on disk, stats %+v %+v", len(ta), sa, sb)
			}
			var total int64
			for name, data := range ta {
				if !bytes.Equal(data, tb[name]) {
					t.Fatalf("%s differs between two trees of one seed", name)
				}
				if name != TreeMarker {
					total += int64(len(data))
				}
			}
			if total != sa.Bytes {
				t.Errorf("files hold %d bytes, stats say %d", total, sa.Bytes)
			}
			if len(tc) != len(ta) {
				t.Fatalf("seed 2: %d files, seed 1: %d", len(tc), len(ta))
			}
			same, sameSize := 0, 0
			for name, data := range ta {
				if _, ok := tc[name]; !ok {
					t.Fatalf("seed 2 lacks %s: names must depend on Files and FanOut only", name)
				}
				if name == TreeMarker {
					continue
				}
				if len(data) == len(tc[name]) {
					sameSize++
				}
				if n := min(len(data), len(tc[name]), 64); bytes.Equal(data[:n], tc[name][:n]) {
					same++
				}
			}
			if same > 10 { // 1-byte files may agree by chance
				t.Errorf("seeds 1 and 2: %d files begin alike", same)
			}
			if _, fixed := d.Fixed(); !fixed && sameSize > n/2 {
				t.Errorf("seeds 1 and 2: %d of %d sizes alike", sameSize, n)
			}
		})
	}
}

func TestTreeContentIsFile(t *testing.T) {
	// File i holds what File writes with seed fileSeed(Seed, i), chunks
	// included.
	dir := filepath.Join(t.TempDir(), "t")
	opts := TreeOptions{Files: 3, Size: UniformSize(1, 3*ChunkSize), Seed: 9}
	mustTree(t, dir, opts)
	l := newLayout(3, DefaultFanOut)
	for i := range 3 {
		got, err := os.ReadFile(filepath.Join(dir, l.path(i)))
		if err != nil {
			t.Fatal(err)
		}
		if want := genBytes(t, int64(len(got)), fileSeed(9, i)); !bytes.Equal(got, want) {
			t.Errorf("file %d (%d bytes) differs from File's", i, len(got))
		}
	}
}

func TestTreeSizes(t *testing.T) {
	for _, tc := range []struct {
		dist   Dist
		lo, hi int64
	}{
		{FixedSize(4096), 4096, 4096},
		{FixedSize(1), 1, 1},
		{UniformSize(1000, 3000), 1000, 3000},
		{LogNormalSize(2000), 1, MaxLogNormalSize},
	} {
		t.Run(tc.dist.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			opts := TreeOptions{Files: 2000, Size: tc.dist, Seed: 5}
			plan, err := PlanTree(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			st := mustTree(t, dir, opts)
			var sizes []int64
			for name, data := range readTree(t, dir) {
				if name == TreeMarker {
					continue
				}
				n := int64(len(data))
				if n < tc.lo || n > tc.hi {
					t.Fatalf("%s: %d bytes, want [%d, %d]", name, n, tc.lo, tc.hi)
				}
				sizes = append(sizes, n)
			}
			if len(sizes) != 2000 || st.Bytes != plan.Bytes || plan.Disk < plan.Bytes {
				t.Fatalf("%d files, stats %+v, plan %+v", len(sizes), st, plan)
			}
			slices.Sort(sizes)
			med := sizes[len(sizes)/2]
			switch tc.dist.kind {
			case distUniform:
				if med < 1800 || med > 2200 {
					t.Errorf("uniform [1000, 3000]: median %d", med)
				}
			case distLogNormal:
				if med < 1600 || med > 2400 {
					t.Errorf("lognormal:2000: median %d", med)
				}
			}
		})
	}
}

func TestTreeFanOut(t *testing.T) {
	for _, fan := range []int{2, 10, 100} {
		t.Run(fmt.Sprint(fan), func(t *testing.T) {
			n := 2000
			if fan == 2 {
				n = 300
			}
			dir := filepath.Join(t.TempDir(), "t")
			mustTree(t, dir, TreeOptions{Files: n, Size: FixedSize(10), FanOut: fan})
			files, depths := 0, map[int]bool{}
			err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					ents, err := os.ReadDir(path)
					if err != nil {
						return err
					}
					if len(ents) > fan || len(ents) == 0 {
						t.Errorf("%s holds %d entries, fan-out %d", path, len(ents), fan)
					}
				} else if d.Name() != TreeMarker {
					files++
					depths[strings.Count(strings.TrimPrefix(path, dir), "/")] = true
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files != n || len(depths) != 1 {
				t.Errorf("%d files at depths %v", files, depths)
			}
		})
	}
}

func TestTreeRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious")
	if err := os.WriteFile(precious, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "00"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := TreeOptions{Files: 2000, Size: FixedSize(100)}
	_, err := Tree(context.Background(), dir, opts)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), "not a tree made by iopath gen --tree") {
		t.Fatalf("err = %v", err)
	}
	if _, perr := PlanTree(dir, opts); perr == nil || perr.Error() != err.Error() {
		t.Errorf("PlanTree: %v, Tree: %v", perr, err)
	}
	got := readTree(t, dir)
	if len(got) != 1 || string(got["precious"]) != "mine" {
		t.Fatalf("the directory changed: %v", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "00")); len(ents) != 0 {
		t.Fatalf("wrote into a foreign directory: %v", ents)
	}

	// Not a directory; no parent.
	if _, err := Tree(context.Background(), precious, opts); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("regular file: err = %v", err)
	}
	if b, _ := os.ReadFile(precious); string(b) != "mine" {
		t.Fatal("the file changed")
	}
	if _, err := Tree(context.Background(), filepath.Join(dir, "no", "t"), opts); !errors.Is(err, fs.ErrNotExist) ||
		!strings.Contains(err.Error(), "(its parent "+filepath.Join(dir, "no")+" must be a directory)") {
		t.Errorf("missing parent: err = %v", err)
	}
	if _, err := Tree(context.Background(), filepath.Join(precious, "t"), opts); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("parent is a file: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Error("created the missing parent")
	}
}

func TestTreeEmptyDir(t *testing.T) {
	dir := t.TempDir()
	st := mustTree(t, dir, TreeOptions{Files: 50, Size: FixedSize(1)})
	if st.Regenerated || len(readTree(t, dir)) != 51 {
		t.Errorf("stats %+v", st)
	}
}

func TestTreeRegenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	opts := TreeOptions{Files: 2000, Size: UniformSize(1, 5000), Seed: 3}
	if st := mustTree(t, dir, opts); st.Regenerated {
		t.Fatal("a new tree says it was regenerated")
	}
	want := readTree(t, dir)
	l := newLayout(opts.Files, DefaultFanOut)

	// Damage the tree: change one file, remove another, put a symbolic
	// link to a file outside the tree and a hard link to another in the
	// place of two more, and add a file of the user's.
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("outside"), 0o644)
	linked := filepath.Join(t.TempDir(), "linked")
	os.WriteFile(linked, []byte("linked"), 0o644)
	os.WriteFile(filepath.Join(dir, l.path(5)), []byte("changed"), 0o644)
	os.Remove(filepath.Join(dir, l.path(6)))
	os.Remove(filepath.Join(dir, l.path(7)))
	if err := os.Symlink(outside, filepath.Join(dir, l.path(7))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, l.path(8)))
	if err := os.Link(linked, filepath.Join(dir, l.path(8))); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("user's"), 0o644)

	st, err := Tree(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Regenerated || st.Files != 2000 {
		t.Errorf("stats %+v", st)
	}
	got := readTree(t, dir)
	if string(got["notes.txt"]) != "user's" {
		t.Error("the user's file changed")
	}
	delete(got, "notes.txt")
	if len(got) != len(want) {
		t.Fatalf("%d files after regenerating, want %d", len(got), len(want))
	}
	for name, data := range want {
		if !bytes.Equal(got[name], data) {
			t.Errorf("%s differs after regenerating", name)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside" {
		t.Error("wrote through a symbolic link")
	}
	if b, _ := os.ReadFile(linked); string(b) != "linked" {
		t.Error("wrote through a hard link")
	}

	// Other parameters: refused, nothing changed.
	for _, other := range []TreeOptions{
		{Files: 2001, Size: opts.Size, Seed: 3},
		{Files: 2000, Size: UniformSize(1, 5001), Seed: 3},
		{Files: 2000, Size: opts.Size, Seed: 4},
		{Files: 2000, Size: opts.Size, Seed: 3, FanOut: 50},
	} {
		_, err := Tree(context.Background(), dir, other)
		if !errors.Is(err, fs.ErrExist) ||
			!strings.Contains(err.Error(), "holds a tree made with other parameters (files=2000 size=1B-5000B seed=3 fanout=100)") {
			t.Errorf("%+v: err = %v", other, err)
		}
	}
	got = readTree(t, dir)
	delete(got, "notes.txt")
	for name, data := range want {
		if !bytes.Equal(got[name], data) {
			t.Fatalf("%s changed by a refused call", name)
		}
	}

	// In the way of a directory: an error, and the file stays.
	dir2 := filepath.Join(t.TempDir(), "t")
	opts2 := TreeOptions{Files: 300, Size: FixedSize(1)}
	mustTree(t, dir2, opts2)
	os.RemoveAll(filepath.Join(dir2, "01"))
	os.WriteFile(filepath.Join(dir2, "01"), []byte("x"), 0o644)
	if _, err := Tree(context.Background(), dir2, opts2); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir2, "01")); string(b) != "x" {
		t.Error("the file in the way changed")
	}
}

// wantFile is file i of a tree made with opts, computed in memory.
func wantFile(opts TreeOptions, i int) []byte {
	b := make([]byte, newSizer(opts).size(i))
	for k := 0; k*ChunkSize < len(b); k++ {
		fill(b[k*ChunkSize:min(len(b), (k+1)*ChunkSize)], fileSeed(opts.Seed, i), uint64(k))
	}
	return b
}

// checkComplete checks that every file of the tree in dir that exists is
// complete and right, and returns how many exist.
func checkComplete(t *testing.T, dir string, opts TreeOptions) int {
	t.Helper()
	if opts.FanOut == 0 {
		opts.FanOut = DefaultFanOut
	}
	l := newLayout(opts.Files, opts.FanOut)
	got := readTree(t, dir)
	if string(got[TreeMarker]) != opts.marker() {
		t.Errorf("marker %q, want %q", got[TreeMarker], opts.marker())
	}
	n := 0
	for i := range opts.Files {
		data, ok := got[l.path(i)]
		if !ok {
			continue
		}
		n++
		if want := wantFile(opts, i); !bytes.Equal(data, want) {
			t.Errorf("%s: %d bytes, not the complete file of %d bytes", l.path(i), len(data), len(want))
		}
	}
	if n != len(got)-1 {
		t.Errorf("%d files on disk are not the tree's", len(got)-1-n)
	}
	return n
}

func TestTreeWriteError(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
		t.Run(errno.Error(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			var writes atomic.Int64
			opts := TreeOptions{Files: 2000, Size: UniformSize(1, 12<<10), Seed: 1}
			opts.write = func(fd int, b []byte) (int, error) {
				if writes.Add(1) > 300 {
					// Half the buffer, then the error, like a full disk.
					n, _ := syscall.Write(fd, b[:len(b)/2])
					return n, errno
				}
				return syscall.Write(fd, b)
			}
			st, err := Tree(context.Background(), dir, opts)
			if !errors.Is(err, errno) {
				t.Fatalf("err = %v, want %v", err, errno)
			}
			want := fmt.Sprintf("(wrote %d of 2000 files,", st.Files)
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), dir) ||
				!strings.Contains(err.Error(), "no partial file left") {
				t.Errorf("error %q does not say %q", err, want)
			}
			if st.Files < 290 || st.Files > 300 {
				t.Errorf("wrote %d files", st.Files)
			}
			opts.write = nil
			if n := checkComplete(t, dir, opts); n != st.Files {
				t.Errorf("%d files on disk, stats say %d", n, st.Files)
			}
			// The same call again completes the tree.
			mustTree(t, dir, opts)
			if n := checkComplete(t, dir, opts); n != 2000 {
				t.Errorf("%d files after rerunning", n)
			}
		})
	}
}

func TestTreeCancel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var writes atomic.Int64
	opts := TreeOptions{Files: 2000, Size: FixedSize(4096), Seed: 1}
	opts.write = func(fd int, b []byte) (int, error) {
		if writes.Add(1) == 500 {
			cancel()
		}
		return syscall.Write(fd, b)
	}
	start := time.Now()
	st, err := Tree(ctx, dir, opts)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "of 2000 files") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
	if w := writes.Load(); w > 510 {
		t.Errorf("%d writes after cancelling at 500", w)
	}
	opts.write = nil
	if n := checkComplete(t, dir, opts); n != st.Files || n < 490 || n > 510 {
		t.Errorf("%d files on disk, stats say %d", n, st.Files)
	}

	// Cancelled within a large file: the file is removed.
	dir = filepath.Join(t.TempDir(), "big")
	ctx, cancel = context.WithCancel(context.Background())
	writes.Store(0)
	opts = TreeOptions{Files: 3, Size: FixedSize(4 * ChunkSize)}
	opts.write = func(fd int, b []byte) (int, error) {
		if writes.Add(1) == 6 {
			cancel()
		}
		return syscall.Write(fd, b)
	}
	st, err = Tree(ctx, dir, opts)
	if !errors.Is(err, context.Canceled) || st.Files != 1 {
		t.Fatalf("stats %+v, err = %v", st, err)
	}
	opts.write = nil
	if n := checkComplete(t, dir, opts); n != 1 {
		t.Errorf("%d files on disk, want 1", n)
	}

	// Cancelled before starting: nothing is made.
	dir = filepath.Join(t.TempDir(), "none")
	if _, err := Tree(ctx, dir, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	assertGone(t, dir)
}

func TestTreeProgress(t *testing.T) {
	var calls [][2]int
	dir := filepath.Join(t.TempDir(), "t")
	mustTree(t, dir, TreeOptions{Files: 2000, Size: FixedSize(100), Progress: func(done, total int) {
		calls = append(calls, [2]int{done, total})
	}})
	if len(calls) < 2 || calls[0] != [2]int{0, 2000} || calls[len(calls)-1] != [2]int{2000, 2000} {
		t.Fatalf("progress calls %v", calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] || calls[i][1] != 2000 {
			t.Fatalf("progress calls %v", calls)
		}
	}
}

func TestTreeOptions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	for _, opts := range []TreeOptions{
		{Files: 0, Size: FixedSize(1)},
		{Files: MaxTreeFiles + 1, Size: FixedSize(1)},
		{Files: 10, Size: FixedSize(1), FanOut: 1},
		{Files: 10},
		{Files: 10, Size: FixedSize(0)},
		{Files: 10, Size: UniformSize(5, 4)},
		{Files: 10, Size: LogNormalSize(MaxLogNormalSize + 1)},
	} {
		if _, err := Tree(context.Background(), dir, opts); err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("%+v: err = %v", opts, err)
		}
		assertGone(t, dir)
	}
	if _, err := Tree(context.Background(), "", TreeOptions{Files: 1, Size: FixedSize(1)}); err == nil {
		t.Error("empty directory name accepted")
	}

	// Clearly too large for the filesystem: ENOSPC before writing, also
	// when the total overflows int64.
	for _, opts := range []TreeOptions{
		{Files: 1000, Size: FixedSize(1 << 50)},
		{Files: MaxTreeFiles, Size: FixedSize(1 << 62)},
	} {
		_, err := Tree(context.Background(), dir, opts)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("err = %v, want ENOSPC", err)
		}
		assertGone(t, dir)
	}
	if p, err := PlanTree(dir, TreeOptions{Files: MaxTreeFiles, Size: FixedSize(1 << 62)}); err != nil ||
		p.Bytes != math.MaxInt64 || p.Disk != math.MaxInt64 {
		t.Errorf("plan %+v, %v: want saturated totals", p, err)
	}
}

func BenchmarkTree(b *testing.B) {
	const files = 10_000
	b.SetBytes(files * 4096)
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
		if _, err := Tree(context.Background(), dir, TreeOptions{Files: files, Size: FixedSize(4096)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*files), "ns/file")
}

func ExampleTree() {
	dir, _ := os.MkdirTemp("", "tree-example")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "src")
	size, _ := ParseDist("1KiB-64KiB")
	st, err := Tree(context.Background(), root, TreeOptions{Files: 12, Size: size, Seed: 1, FanOut: 5})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Files, "files")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(root, path); !d.IsDir() && strings.Count(rel, "/") == 1 && strings.HasPrefix(rel, "1/") {
			fmt.Println(rel)
		}
		return err
	})
	// Output:
	// 12 files
	// 1/file-05.dat
	// 1/file-06.dat
	// 1/file-07.dat
	// 1/file-08.dat
	// 1/file-09.dat
}

// The marker is recognised as gen's by its name and its content together:
// a user's file of the same name is not taken for it.
func TestIsTreeMarker(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if _, err := Tree(context.Background(), dir, TreeOptions{Files: 3, Size: FixedSize(10), Seed: 4}); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, TreeMarker)
	if !IsTreeMarker(marker) {
		t.Fatalf("%s is not recognised", marker)
	}
	data, _ := os.ReadFile(marker)
	if !IsTreeMarkerData(data) {
		t.Fatalf("%q is not recognised", data)
	}
	other := t.TempDir()
	for name, content := range map[string]string{
		TreeMarker:       "my own notes\n",
		"copy":           string(data),
		TreeMarker + "x": string(data),
	} {
		p := filepath.Join(other, name)
		os.WriteFile(p, []byte(content), 0o644)
		if IsTreeMarker(p) {
			t.Errorf("%s (%q) taken for gen's marker", name, content)
		}
	}
	for _, d := range []string{"", markerHeader, markerHeader + "files=3\n", string(data) + "more\n", "x" + string(data)} {
		if IsTreeMarkerData([]byte(d)) {
			t.Errorf("%q taken for gen's marker", d)
		}
	}
	if IsTreeMarker(filepath.Join(other, "missing", TreeMarker)) || IsTreeMarker(dir) {
		t.Error("a missing file or a directory taken for the marker")
	}
}

// A panic in Progress, called while the workers write, reaches Tree's
// caller only once every worker has stopped: nothing of Tree's runs after
// the recover (goleak checks at the end), and no temporary file is left.
func TestTreeProgressPanics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	calls := 0
	func() {
		defer func() {
			if r := recover(); r != "stop here" {
				t.Fatalf("recovered %v, want the Progress panic", r)
			}
		}()
		Tree(context.Background(), dir, TreeOptions{Files: 20000, Size: FixedSize(4 << 10), Progress: func(done, total int) {
			if calls++; calls == 2 { // the first tick: the workers are writing
				panic("stop here")
			}
		}})
		t.Fatal("Tree returned instead of panicking")
	}()
	// Every worker has stopped: the tree does not change any more.
	count := func() int {
		n := 0
		filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	before := count()
	time.Sleep(100 * time.Millisecond)
	if after := count(); after != before {
		t.Errorf("%d files after the panic, %d a moment later: writers still running", before, after)
	}
}
