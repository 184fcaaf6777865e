package batch

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// archiveTestTree makes a tree of regular files of awkward sizes and
// names, plus entries Pack must skip: two symlinks and a FIFO. It returns
// the directory and the number of bytes of its regular files.
func archiveTestTree(t testing.TB) (string, int64) {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	long := strings.Repeat("long-name-", 12) // over USTAR's 100 bytes
	files := map[string]int{
		"empty":                      0,
		"one":                        1,
		"four-k":                     4 << 10,
		"sub/hundred-k":              100 << 10,
		"sub/deeper/three-m":         3 << 20,
		"sub/deeper/still/x":         17,
		"a/" + long + "/" + long:     513,
		"ünïcode/файл":               4095,
		"sub/deeper/still/zz-last":   4097,
		"sub/00-first-in-sub":        511,
		"text/lines":                 20000,
		"sub/deeper/AAA-upper-first": 2,
	}
	var total int64
	for name, size := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if name == "text/lines" {
			data = archiveTextLike(rng, size)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		total += int64(size)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("one", filepath.Join(dir, "link-to-file")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "sub/link-to-dir")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, total
}

// archiveTextLike returns n bytes of log-like text: a small vocabulary,
// numbers, lines.
func archiveTextLike(rng *rand.Rand, n int) []byte {
	words := []string{"GET", "PUT", "/api/v1/items", "/static/app.js", "200", "404", "user",
		"session", "cache", "miss", "hit", "latency", "ms", "the", "request", "from", "to", "ok"}
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "2026-01-%02d %02d:%02d:%02d", rng.IntN(28)+1, rng.IntN(24), rng.IntN(60), rng.IntN(60))
		for range 4 + rng.IntN(8) {
			b.WriteByte(' ')
			b.WriteString(words[rng.IntN(len(words))])
		}
		fmt.Fprintf(&b, " %d\n", rng.IntN(100000))
	}
	return b.Bytes()[:n]
}

// archiveWant is every regular file under dir, by slash-separated relative
// name, in the walk's order.
func archiveWant(t testing.TB, dir string) (names []string, data map[string][]byte) {
	t.Helper()
	data = map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		names = append(names, rel)
		data[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, data
}

// archivePack packs dir into a new file named name in a fresh directory.
func archivePack(t testing.TB, dir, name string, opts PackOptions) (string, PackStats) {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Pack(context.Background(), dir, f, opts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// archiveRead reads an archive through the engine, copying every file.
func archiveRead(ctx context.Context, job Job) (names []string, data map[string][]byte, st *Stats, err error) {
	e, lerr := Lookup("archive")
	if lerr != nil {
		return nil, nil, nil, lerr
	}
	data = map[string][]byte{}
	st, err = Read(ctx, e, job, func(f *File) error {
		if f.Err != nil {
			return f.Err
		}
		names = append(names, f.Path)
		data[f.Path] = bytes.Clone(f.Data)
		return nil
	})
	return names, data, st, err
}

func TestPackArchiveRoundTrip(t *testing.T) {
	dir, total := archiveTestTree(t)
	wantNames, want := archiveWant(t, dir)
	for _, tc := range []struct {
		name string
		opts PackOptions
	}{
		{"tree.tar", PackOptions{}},
		{"tree.tar.zst", PackOptions{Zstd: true}},
		{"tree-fastest.tar.zst", PackOptions{Zstd: true, Level: LevelFastest}},
		{"tree-better.tar.zst", PackOptions{Zstd: true, Level: LevelBetter}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progressCalls int64
			tc.opts.Progress = func(files, bytes int64) { progressCalls++ }
			out, pst := archivePack(t, dir, tc.name, tc.opts)
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if pst.Files != int64(len(want)) || pst.Bytes != total || pst.Symlinks != 2 || pst.Special != 1 ||
				pst.Written != fi.Size() || progressCalls != pst.Files {
				t.Fatalf("PackStats %+v (progress calls %d), want %d files, %d bytes, 2 symlinks, 1 special, %d written",
					pst, progressCalls, len(want), total, fi.Size())
			}
			if s := pst.Skipped(); s != "2 symlinks, 1 special file" {
				t.Errorf("Skipped() = %q", s)
			}
			for _, workers := range []int{0, 1, 4} {
				names, got, st, err := archiveRead(context.Background(), Job{Archive: out, Workers: workers, Latency: true})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(names, wantNames) {
					t.Fatalf("workers %d: names\n%q\nwant (walk order)\n%q", workers, names, wantNames)
				}
				for name, w := range want {
					if !bytes.Equal(got[name], w) {
						t.Fatalf("workers %d: %s: %d bytes differ from the file's %d", workers, name, len(got[name]), len(w))
					}
				}
				if st.Files != int64(len(want)) || st.Bytes != total || st.Errors != 0 {
					t.Errorf("Stats %+v, want %d files, %d bytes", st, len(want), total)
				}
				if st.Lat == nil || st.Lat.Count() != st.Files {
					t.Errorf("latency: %v, want %d samples", st.Lat, st.Files)
				}
				// open, close, and ~one read per MiB (plus EOF).
				if maxCalls := 2 + fi.Size()>>20 + 3; st.Syscalls < 3 || st.Syscalls > maxCalls {
					t.Errorf("Syscalls = %d for a %d-byte archive, want 3..%d", st.Syscalls, fi.Size(), maxCalls)
				}
			}
		})
	}
}

// TestPackExtractsWithTar checks the archives are ordinary: GNU tar
// extracts the same files.
func TestPackExtractsWithTar(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar")
	}
	dir, _ := archiveTestTree(t)
	_, want := archiveWant(t, dir)
	for _, name := range []string{"x.tar", "x.tar.zst"} {
		t.Run(name, func(t *testing.T) {
			args := []string{"-xf"}
			if strings.HasSuffix(name, ".zst") {
				if _, err := exec.LookPath("zstd"); err != nil {
					t.Skip("no zstd")
				}
				args = []string{"--zstd", "-xf"}
			}
			out, _ := archivePack(t, dir, name, PackOptions{Zstd: strings.HasSuffix(name, ".zst")})
			dst := t.TempDir()
			cmd := exec.Command("tar", append(args, out, "-C", dst)...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("tar: %v: %s", err, b)
			}
			_, got := archiveWant(t, dst)
			if len(got) != len(want) {
				t.Fatalf("tar extracted %d files, want %d", len(got), len(want))
			}
			for n, w := range want {
				if !bytes.Equal(got[n], w) {
					t.Errorf("%s differs after tar -x", n)
				}
			}
		})
	}
}

func TestPackDeterministic(t *testing.T) {
	dir, _ := archiveTestTree(t)
	for _, z := range []bool{false, true} {
		a, _ := archivePack(t, dir, "a", PackOptions{Zstd: z})
		b, _ := archivePack(t, dir, "b", PackOptions{Zstd: z})
		ba, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if !bytes.Equal(ba, bb) {
			t.Errorf("zstd %v: two packs of the same tree differ", z)
		}
	}
}

func TestPackEmptyDirAndSymlinkRoot(t *testing.T) {
	empty := t.TempDir()
	out, st := archivePack(t, empty, "e.tar.zst", PackOptions{Zstd: true})
	if st.Files != 0 {
		t.Fatalf("%+v", st)
	}
	names, _, rst, err := archiveRead(context.Background(), Job{Archive: out})
	if err != nil || len(names) != 0 || rst.Files != 0 {
		t.Fatalf("empty archive: %v %q %+v", err, names, rst)
	}

	dir, _ := archiveTestTree(t)
	link := filepath.Join(t.TempDir(), "root-link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	_, st = archivePack(t, link, "l.tar", PackOptions{})
	wantNames, _ := archiveWant(t, dir)
	if st.Files != int64(len(wantNames)) {
		t.Fatalf("DIR as a symlink to a directory: packed %d files, want %d", st.Files, len(wantNames))
	}
}

func TestPackErrors(t *testing.T) {
	ctx := context.Background()
	dir, _ := archiveTestTree(t)

	if _, err := Pack(ctx, filepath.Join(dir, "missing"), io.Discard, PackOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := Pack(ctx, filepath.Join(dir, "one"), io.Discard, PackOptions{}); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("dir is a file: %v", err)
	}

	// A file that vanishes between the walk and its open: the error names it.
	victim := filepath.Join(dir, "four-k")
	_, err := Pack(ctx, dir, io.Discard, PackOptions{Progress: func(files, _ int64) {
		if files == 1 { // "a/.../...", then "empty", then "four-k"
			os.Remove(victim)
		}
	}})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), victim) {
		t.Errorf("vanished file: %v, want ENOENT naming %s", err, victim)
	}

	// The archive being written inside the tree.
	self, err := os.Create(filepath.Join(dir, "self.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	if _, err := Pack(ctx, dir, self, PackOptions{}); err == nil || !strings.Contains(err.Error(), "pack itself") {
		t.Errorf("packing into itself: %v", err)
	}
	os.Remove(self.Name())

	// A full disk.
	for _, z := range []bool{false, true} {
		_, err := Pack(ctx, dir, &archiveFullWriter{room: 100 << 10}, PackOptions{Zstd: z})
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("zstd %v: full disk: %v, want ENOSPC", z, err)
		}
	}

	// Cancelled.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Pack(cctx, dir, io.Discard, PackOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestPackUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	_, err := Pack(context.Background(), dir, io.Discard, PackOptions{})
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), p) {
		t.Errorf("unreadable file: %v", err)
	}
}

// archiveFullWriter fails with ENOSPC after room bytes.
type archiveFullWriter struct{ room int }

func (w *archiveFullWriter) Write(p []byte) (int, error) {
	if len(p) > w.room {
		n := w.room
		w.room = 0
		return n, &fs.PathError{Op: "write", Path: "full", Err: syscall.ENOSPC}
	}
	w.room -= len(p)
	return len(p), nil
}

func TestArchiveNoArchive(t *testing.T) {
	e, err := Lookup("archive")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(context.Background(), e, Job{Paths: []string{t.TempDir()}}, func(*File) error { return nil })
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "iopath pack DIR -o FILE") {
		t.Errorf("no Job.Archive: %v", err)
	}
}

func TestArchiveTruncated(t *testing.T) {
	dir, _ := archiveTestTree(t)
	for _, z := range []bool{false, true} {
		out, _ := archivePack(t, dir, "t", PackOptions{Zstd: z})
		full, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		cuts := []int{len(full) / 2, len(full) - 1, 100, len(full) - 1024}
		if !z {
			// At a member's end, without the end-of-archive blocks:
			// Next alone would call that a clean end.
			names, _ := archiveWant(t, dir)
			for _, n := range names[:3] {
				cuts = append(cuts, archiveMemberEnd(t, full, n))
			}
		}
		for _, cut := range cuts {
			p := filepath.Join(t.TempDir(), "cut")
			if err := os.WriteFile(p, full[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, _, err := archiveRead(context.Background(), Job{Archive: p})
			if err == nil {
				t.Errorf("zstd %v: cut at %d of %d: no error", z, cut, len(full))
				continue
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("zstd %v: cut at %d: error does not name the archive: %v", z, cut, err)
			}
			if !z && !strings.Contains(err.Error(), "member") {
				t.Errorf("cut at %d: error does not name the member: %v", cut, err)
			}
			t.Logf("zstd %v, cut at %d: %v", z, cut, err)
		}
	}
}

// archiveMemberEnd is the offset just past member name's data and padding.
func archiveMemberEnd(t *testing.T, tarball []byte, name string) int {
	t.Helper()
	r := bytes.NewReader(tarball)
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not found: %v", name, err)
		}
		if hdr.Name == name {
			io.Copy(io.Discard, tr)
			return len(tarball) - r.Len() + int(-hdr.Size&511)
		}
	}
}

func TestArchiveNotAnArchive(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 10000)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	cases := map[string][]byte{
		"random": random,
		"text":   []byte("hello, this is not a tar file\n"),
		"empty":  nil,
		"gzip":   {0x1f, 0x8b, 8, 0, 0, 0, 0, 0},
		"zstd":   append([]byte{0x28, 0xb5, 0x2f, 0xfd}, random[:100]...),
	}
	for name, b := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := archiveRead(context.Background(), Job{Archive: p})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming %s", name, err, p)
		}
		t.Logf("%s: %v", name, err)
	}
	if _, _, _, err := archiveRead(context.Background(), Job{Archive: dir}); err == nil {
		t.Error("a directory as the archive: no error")
	}
	if _, _, _, err := archiveRead(context.Background(), Job{Archive: filepath.Join(dir, "missing")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing archive: %v", err)
	}
}

// TestArchiveForeignMembers reads a tar another tool might write:
// directory, symlink and hard-link members are skipped with a note.
func TestArchiveForeignMembers(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, data string) {
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, data)
	}
	add(&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o644}, "hello")
	add(&tar.Header{Name: "d/l", Typeflag: tar.TypeSymlink, Linkname: "f"}, "")
	add(&tar.Header{Name: "d/h", Typeflag: tar.TypeLink, Linkname: "d/f"}, "")
	add(&tar.Header{Name: "g", Typeflag: tar.TypeReg, Mode: 0o644}, "world!")
	tw.Close()
	p := filepath.Join(t.TempDir(), "foreign.tar")
	os.WriteFile(p, buf.Bytes(), 0o644)
	names, data, st, err := archiveRead(context.Background(), Job{Archive: p, Paths: []string{"ignored"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"d/f", "g"}) || string(data["d/f"]) != "hello" || string(data["g"]) != "world!" {
		t.Fatalf("got %q %q", names, data)
	}
	if len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "skipped 3 members") {
		t.Errorf("notes %q", st.Notes)
	}
}

func TestArchiveStops(t *testing.T) {
	dir, _ := archiveTestTree(t)
	for _, z := range []bool{false, true} {
		out, _ := archivePack(t, dir, "s", PackOptions{Zstd: z})
		e, _ := Lookup("archive")

		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		st, err := Read(ctx, e, Job{Archive: out}, func(*File) error {
			if n++; n == 2 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || st.Files != 2 {
			t.Errorf("zstd %v: cancelled after 2 files: %v, %d files", z, err, st.Files)
		}

		stop := errors.New("enough")
		n = 0
		st, err = Read(context.Background(), e, Job{Archive: out}, func(*File) error {
			if n++; n == 3 {
				return stop
			}
			return nil
		})
		if err != stop || st.Files != 3 {
			t.Errorf("zstd %v: fn error: %v, %d files", z, err, st.Files)
		}
	}
}

// BenchmarkArchive reads 10,000 files of 4 KiB packed as tar and tar.zst,
// random (incompressible) and text-like, through the archive engine from
// the page cache. workers is the zstd decoder's concurrency.
func BenchmarkArchive(b *testing.B) {
	const nFiles, size = 10000, 4 << 10
	for _, kind := range []string{"text", "random"} {
		dir := b.TempDir()
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range nFiles {
			sub := filepath.Join(dir, fmt.Sprintf("d%02d", i/1000))
			if i%1000 == 0 {
				if err := os.Mkdir(sub, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			data := make([]byte, size)
			if kind == "text" {
				data = archiveTextLike(rng, size)
			} else {
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d", i)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for _, format := range []string{"tar", "tar.zst"} {
			out, pst := archivePack(b, dir, "bench."+format, PackOptions{Zstd: format == "tar.zst"})
			workers := []int{0}
			if format == "tar.zst" {
				workers = []int{1, 2, 4}
			}
			for _, w := range workers {
				name := fmt.Sprintf("%s/%s", kind, format)
				if format == "tar.zst" {
					name += fmt.Sprintf("/workers=%d", w)
				}
				b.Run(name, func(b *testing.B) {
					e, _ := Lookup("archive")
					job := Job{Archive: out, Workers: w}
					b.SetBytes(int64(nFiles * size))
					var files int64
					for b.Loop() {
						st, err := Read(context.Background(), e, job, func(f *File) error { return nil })
						if err != nil {
							b.Fatal(err)
						}
						files += st.Files
					}
					b.ReportMetric(float64(files)/b.Elapsed().Seconds(), "files/s")
					b.ReportMetric(float64(pst.Bytes)/float64(pst.Written), "ratio")
				})
			}
		}
	}
}

// archiveTarFiles reads b's regular files with archive/tar.
func archiveTarFiles(b []byte) ([]string, [][]byte, error) {
	var names []string
	var data [][]byte
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names, data, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		d, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, hdr.Name)
		data = append(data, d)
	}
}

// archiveScanFiles reads b's regular files with tarScanner.
func archiveScanFiles(b []byte) ([]string, [][]byte, error) {
	var names []string
	var data [][]byte
	sc := &tarScanner{r: bytes.NewReader(b)}
	var buf []byte
	for {
		err := sc.next()
		if err == io.EOF {
			return names, data, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if buf, err = sc.read(buf); err != nil {
			return nil, nil, err
		}
		names = append(names, sc.name)
		data = append(data, bytes.Clone(buf))
	}
}

// archiveTarSeeds are small archives in every format archive/tar writes,
// with the members and names that need metadata headers.
func archiveTarSeeds(t testing.TB) [][]byte {
	long := strings.Repeat("d/", 60) + "f"
	var seeds [][]byte
	for _, format := range []tar.Format{tar.FormatUnknown, tar.FormatUSTAR, tar.FormatPAX, tar.FormatGNU} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i, m := range []struct {
			name string
			typ  byte
			data string
		}{
			{"a", tar.TypeReg, "hello"},
			{"dir/", tar.TypeDir, ""},
			{"dir/l", tar.TypeSymlink, ""},
			{"dir/empty", tar.TypeReg, ""},
			{long, tar.TypeReg, strings.Repeat("x", 513)},
			{"ünï/файл", tar.TypeReg, "utf8"},
			{strings.Repeat("n", 150), tar.TypeReg, "long base name"},
		} {
			hdr := &tar.Header{Name: m.name, Typeflag: m.typ, Size: int64(len(m.data)), Mode: 0o644,
				Linkname: map[bool]string{true: "a"}[m.typ == tar.TypeSymlink], Format: format}
			if m.typ == tar.TypeReg && i == 3 && format == tar.FormatPAX {
				hdr.PAXRecords = map[string]string{"comment": "x"}
			}
			if err := tw.WriteHeader(hdr); err != nil {
				continue // this format cannot hold it
			}
			io.WriteString(tw, m.data)
		}
		tw.Close()
		seeds = append(seeds, buf.Bytes())
	}
	// Base-256 size, a global header, a V7 header.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "global", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"path": "p"}})
	tw.WriteHeader(&tar.Header{Name: "after-global", Typeflag: tar.TypeReg, Size: 3})
	io.WriteString(tw, "abc")
	tw.Close()
	seeds = append(seeds, buf.Bytes())
	return seeds
}

// TestTarScannerAgrees reads archives in every format archive/tar writes,
// and GNU tar's, and compares with archive/tar.
func TestTarScannerAgrees(t *testing.T) {
	seeds := archiveTarSeeds(t)
	if _, err := exec.LookPath("tar"); err == nil {
		dir, _ := archiveTestTree(t)
		for _, format := range []string{"gnu", "posix", "ustar", "v7", "oldgnu"} {
			out := filepath.Join(t.TempDir(), format+".tar")
			cmd := exec.Command("tar", "--format="+format, "-cf", out, "-C", dir, ".")
			if b, err := cmd.CombinedOutput(); err != nil {
				// ustar and v7 cannot hold the long names: tar says so
				// and writes the rest.
				t.Logf("tar --format=%s: %v: %.200s", format, err, b)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, b)
		}
	}
	for i, b := range seeds {
		wantN, wantD, err := archiveTarFiles(b)
		if err != nil {
			t.Fatalf("seed %d: archive/tar: %v", i, err)
		}
		gotN, gotD, err := archiveScanFiles(b)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if !slices.Equal(gotN, wantN) || !slices.EqualFunc(gotD, wantD, bytes.Equal) {
			t.Fatalf("seed %d: names %q, want %q (or data differs)", i, gotN, wantN)
		}
		if len(wantN) == 0 {
			t.Fatalf("seed %d: only %d files", i, len(wantN))
		}
	}
}

// FuzzTarScanner checks tarScanner against archive/tar: on whatever
// archive/tar reads in full, it delivers the same regular files, or fails
// only for what it refuses on purpose (sparse files, a stream that ends
// without an end-of-archive marker).
func FuzzTarScanner(f *testing.F) {
	for _, s := range archiveTarSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 512))
	f.Fuzz(func(t *testing.T, b []byte) {
		gotN, gotD, err := archiveScanFiles(b)
		wantN, wantD, werr := archiveTarFiles(b)
		if werr != nil {
			return // archive/tar refuses it; tarScanner may be more lenient
		}
		if err != nil {
			if errors.Is(err, errTarNoEnd) || errors.Is(err, errTarDangling) || strings.Contains(err.Error(), "sparse") {
				return
			}
			t.Fatalf("archive/tar reads %q, tarScanner fails: %v", wantN, err)
		}
		if !slices.Equal(gotN, wantN) || !slices.EqualFunc(gotD, wantD, bytes.Equal) {
			t.Fatalf("names %q, archive/tar's %q (or data differs)", gotN, wantN)
		}
	})
}

func TestTarChecksum(t *testing.T) {
	naive := func(h *[tarBlock]byte) (unsigned, signed int64) {
		for i, c := range h {
			if i >= 148 && i < 156 {
				c = ' '
			}
			unsigned += int64(c)
			signed += int64(int8(c))
		}
		return
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		var h [tarBlock]byte
		for j := range h {
			switch i % 3 {
			case 0:
				h[j] = byte(rng.Uint32())
			case 1:
				h[j] = 0xff
			default:
				h[j] = byte(rng.IntN(128))
			}
		}
		u, s := naive(&h)
		for _, sum := range []int64{u, s, u + 1} {
			copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum&0o777777))
			if sum < 0 || sum > 0o777777 {
				continue
			}
			want := sum == u || sum == s
			if got := tarChecksumOK(&h); got != want {
				t.Fatalf("block %d, field %o: got %v, want %v (unsigned %d, signed %d)", i, sum, got, want, u, s)
			}
		}
	}
}

// TestArchiveDataAppend: an fn that appends to File.Data (which it may
// not keep) must not corrupt the members after it.
func TestArchiveDataAppend(t *testing.T) {
	dir, _ := archiveTestTree(t)
	wantNames, want := archiveWant(t, dir)
	out, _ := archivePack(t, dir, "a.tar", PackOptions{})
	e, _ := Lookup("archive")
	var names []string
	_, err := Read(context.Background(), e, Job{Archive: out}, func(f *File) error {
		if !bytes.Equal(f.Data, want[f.Path]) {
			return fmt.Errorf("%s: data differs", f.Path)
		}
		names = append(names, f.Path)
		_ = append(f.Data, "garbage that must land in a copy"...)
		return nil
	})
	if err != nil || !slices.Equal(names, wantNames) {
		t.Fatalf("%v, %q", err, names)
	}
}

// TestPackCancelledWhileCompressing: Pack stopped by its context while
// the zstd encoder still has blocks in flight counts what was written
// only once they are: run under -race, reading the count while the
// encoder's goroutines write was a data race.
func TestPackCancelledWhileCompressing(t *testing.T) {
	dir := t.TempDir()
	files := map[string]int{}
	for i := range 8 {
		files[fmt.Sprintf("f%d", i)] = 1 << 20 // incompressible: every block is written out
	}
	writeTree(t, dir, files)
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		st, err := Pack(ctx, dir, &out, PackOptions{Zstd: true, Progress: func(n, _ int64) {
			if n == 4 {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled after 4 files: %v", err)
		}
		if st.Files != 4 || st.Written != int64(out.Len()) {
			t.Errorf("files %d (want 4), written %d, the writer holds %d", st.Files, st.Written, out.Len())
		}
	}
}
