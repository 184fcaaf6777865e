package enginetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/wdata"
)

// RunWriter checks that w writes every block of the plan with the
// source's bytes, for every pattern and sync mode it supports, with one
// and several workers; that the data read back from the device is what
// was written (wdata's verify); that its counters add up; and that it
// fails cleanly, naming the path, on bad files, a full disk, a
// cancelled context and a failing source.
func RunWriter(t *testing.T, w engine.Writer) {
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	layOut(t, probe, 4096)
	if p, err := w.PrepareWrite(engine.Job{Path: probe, BlockSize: 4096, QueueDepth: 4}); errors.Is(err, engine.ErrNotSupported) {
		t.Skipf("%s cannot run here: %v", w.Name(), err)
	} else if err != nil {
		t.Fatal(err)
	} else {
		p.Close()
	}
	syncs := []engine.Sync{{}, {Mode: engine.SyncEnd}, {Mode: engine.SyncEvery, Every: 3}, {Mode: engine.SyncDSync}}
	if w.Caps().Direct {
		syncs = append(syncs, engine.Sync{Mode: engine.SyncDirect})
	}
	for _, pat := range []engine.Pattern{engine.Sequential, engine.Random, engine.Append} {
		for _, sy := range syncs {
			// One worker with small blocks, three with large ones (whose
			// last block is short).
			for _, c := range []struct{ workers, bs int }{{1, 4096}, {3, 64 << 10}} {
				job := engine.Job{Pattern: pat, Sync: sy, Workers: c.workers, BlockSize: c.bs, QueueDepth: 4, Vectors: 3, Latency: true}
				size := int64(20*c.bs + (c.bs/2+4095)/4096*4096) // a short last block, of whole pages for O_DIRECT
				name := fmt.Sprintf("%v/%v/w%d/bs%d", pat, sy, c.workers, c.bs)
				t.Run(name, func(t *testing.T) { checkWrite(t, w, dir, job, size) })
			}
		}
	}
	t.Run("errors", func(t *testing.T) { checkWriteErrors(t, w, dir) })
	t.Run("cancel", func(t *testing.T) { checkWriteCancel(t, w, dir) })
	t.Run("source error", func(t *testing.T) { checkSourceError(t, w, dir) })
	t.Run("full disk", func(t *testing.T) { checkFullDisk(t, w) })
}

// layOut makes path with size bytes of zeros, allocated.
func layOut(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkWrite(t *testing.T, w engine.Writer, dir string, job engine.Job, size int64) {
	job.Path = filepath.Join(dir, "w.dat")
	os.Remove(job.Path)
	base := int64(0)
	if job.Pattern == engine.Append {
		base = 8192 // the append starts at the end of what is there
		layOut(t, job.Path, base)
		job.Size = size
	} else {
		layOut(t, job.Path, size)
	}
	p, err := w.PrepareWrite(job)
	if errors.Is(err, engine.ErrNotSupported) {
		t.Skipf("%s: %v", w.Name(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	src := wdata.New(7, job.BlockSize)
	for pass := uint64(1); pass <= 2; pass++ {
		if job.Pattern == engine.Append && pass == 2 {
			base += size // the second pass appends after the first
		}
		src.SetPass(pass)
		st, err := p.Run(context.Background(), src)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		tot := st.Total()
		nblocks := (size + int64(job.BlockSize) - 1) / int64(job.BlockSize)
		if tot.Bytes != size || tot.Blocks != nblocks {
			t.Fatalf("pass %d: wrote %d bytes in %d blocks, want %d in %d", pass, tot.Bytes, tot.Blocks, size, nblocks)
		}
		if tot.Lat == nil || tot.Lat.Count() != nblocks {
			t.Fatalf("pass %d: latency histogram missing or short: %v", pass, tot.Lat)
		}
		want := wantSyncs(w, &job, nblocks, st)
		if w.Caps().Queue && job.Sync.Mode == engine.SyncEvery {
			// One FSYNC covers every group completed since the last.
			if tot.Syncs < min(want, 1) || tot.Syncs > want {
				t.Fatalf("pass %d: %d syncs, want 1 to %d", pass, tot.Syncs, want)
			}
		} else if tot.Syncs != want {
			t.Fatalf("pass %d: %d syncs, want %d", pass, tot.Syncs, want)
		}
		if tot.Syncs > 0 && (tot.SyncLat == nil || tot.SyncLat.Count() != tot.Syncs) {
			t.Fatalf("pass %d: %d syncs but sync latency has %v", pass, tot.Syncs, tot.SyncLat)
		}
		if _, err := src.Verify(job.Path, base, size); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		fi, err := os.Stat(job.Path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != base+size {
			t.Fatalf("pass %d: file is %d bytes, want %d", pass, fi.Size(), base+size)
		}
	}
}

// wantSyncs is the sync calls job must make in one run: one for SyncEnd;
// for SyncEvery, a worker's blocks divided by Every (in whole calls of
// pwritev's k blocks, which count together); for mmap's SyncDSync one
// per block.
func wantSyncs(w engine.Writer, job *engine.Job, nblocks int64, st *engine.Stats) int64 {
	switch job.Sync.Mode {
	case engine.SyncEnd:
		return 1
	case engine.SyncDSync:
		if w.Name() == "mmap" {
			return nblocks
		}
	case engine.SyncEvery:
		var n int64
		for _, ws := range st.Workers {
			if w.Name() == "pwritev" {
				// Counted per call: every call that brings the count to
				// Every or past it syncs and starts again from 0.
				n += pwritevSyncs(ws.Blocks, int64(job.Vectors), int64(job.Sync.Every), job.Pattern)
				continue
			}
			n += ws.Blocks / int64(job.Sync.Every)
		}
		return n
	}
	return 0
}

func pwritevSyncs(blocks, k, every int64, pat engine.Pattern) int64 {
	if pat == engine.Random {
		k = 1
	}
	var n, since int64
	for blocks > 0 {
		m := min(k, blocks)
		blocks -= m
		if since += m; since >= every {
			n++
			since = 0
		}
	}
	return n
}

func checkWriteErrors(t *testing.T, w engine.Writer, dir string) {
	run := func(job engine.Job) error {
		job.BlockSize = 4096
		p, err := w.PrepareWrite(job)
		if err != nil {
			return err
		}
		defer p.Close()
		_, err = p.Run(context.Background(), wdata.New(1, 4096))
		return err
	}
	missing := filepath.Join(dir, "missing")
	if err := run(engine.Job{Path: missing, Size: 4096}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	} else if _, serr := os.Stat(missing); serr == nil {
		t.Errorf("missing file: the writer created it")
	}
	namesPathOf(t, run(engine.Job{Path: missing, Size: 4096}), missing)
	if err := run(engine.Job{Path: dir, Size: 4096}); err == nil || !errors.Is(err, syscall.EISDIR) {
		t.Errorf("directory: %v, want EISDIR", err)
	}
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	if err := run(engine.Job{Path: fifo, Size: 4096}); !errors.Is(err, engine.ErrNotRegular) && !errors.Is(err, syscall.ENXIO) {
		t.Errorf("fifo: %v, want ErrNotRegular or ENXIO", err)
	}
	empty := filepath.Join(dir, "empty")
	layOut(t, empty, 0)
	if err := run(engine.Job{Path: empty}); err == nil {
		t.Errorf("empty file without a size: no error")
	}
	if w.Caps().Direct {
		odd := filepath.Join(dir, "odd")
		layOut(t, odd, 5000)
		if err := run(engine.Job{Path: odd, Direct: true}); err == nil {
			t.Errorf("O_DIRECT of 5000 bytes: no error")
		}
	}
	if _, err := w.PrepareWrite(engine.Job{Path: "x", Sync: engine.Sync{Mode: engine.SyncEvery}}); err == nil {
		t.Errorf("every:0 accepted")
	}
}

func namesPathOf(t *testing.T, err error, path string) {
	t.Helper()
	var pe *fs.PathError
	if err == nil || !errors.As(err, &pe) || pe.Path != path {
		t.Errorf("error %v does not name %s", err, path)
	}
}

func checkWriteCancel(t *testing.T, w engine.Writer, dir string) {
	path := filepath.Join(dir, "cancel.dat")
	layOut(t, path, 8<<20)
	p, err := w.PrepareWrite(engine.Job{Path: path, BlockSize: 4096, Workers: 2, QueueDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	src := &slowSource{Source: wdata.New(1, 4096), cancel: cancel, after: 10}
	start := time.Now()
	_, err = p.Run(ctx, src)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

// slowSource cancels after some blocks.
type slowSource struct {
	*wdata.Source
	cancel func()
	after  int64
	n      atomic.Int64
}

func (s *slowSource) Fill(w int, off int64, b []byte) error {
	if s.n.Add(1) == s.after {
		s.cancel()
	}
	return s.Source.Fill(w, off, b)
}

var errSource = errors.New("source failed")

type failingSource struct{ *wdata.Source }

func (s failingSource) Fill(w int, off int64, b []byte) error {
	if off >= 64<<10 {
		return errSource
	}
	return s.Source.Fill(w, off, b)
}

func checkSourceError(t *testing.T, w engine.Writer, dir string) {
	path := filepath.Join(dir, "src.dat")
	layOut(t, path, 1<<20)
	p, err := w.PrepareWrite(engine.Job{Path: path, BlockSize: 4096, Workers: 2, QueueDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Run(context.Background(), failingSource{wdata.New(1, 4096)}); !errors.Is(err, errSource) {
		t.Fatalf("failing source: %v", err)
	}
}

// checkFullDisk writes more than a small tmpfs holds: the run fails
// with ENOSPC (mmap: a SIGBUS turned into an error), naming the path.
func checkFullDisk(t *testing.T, w engine.Writer) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	path := filepath.Join(dir, "full.dat")
	layOut(t, path, 0)
	for _, pat := range []engine.Pattern{engine.Sequential, engine.Append} {
		p, err := w.PrepareWrite(engine.Job{Path: path, Pattern: pat, Size: 1 << 20, BlockSize: 4096, QueueDepth: 4})
		if errors.Is(err, engine.ErrNotSupported) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Run(context.Background(), wdata.New(1, 4096))
		p.Close()
		if err == nil {
			t.Fatalf("%v: writing 1 MiB into a 256 KiB tmpfs succeeded", pat)
		}
		namesPathOf(t, err, path)
		if !errors.Is(err, syscall.ENOSPC) && w.Name() != "mmap" {
			t.Errorf("%v: %v, want ENOSPC", pat, err)
		}
		os.Truncate(path, 0)
	}
}
