package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/wdata"
	"github.com/iopath/iopath/metrics"
)

// writePattern is a write row's pattern, in fio's words.
func writePattern(p engine.Pattern) string {
	switch p {
	case engine.Random:
		return "randwrite"
	case engine.Append:
		return "append"
	}
	return "write"
}

// writeNotes are the report's notes on a write benchmark: what its sync
// mode promises, and how the data was checked.
func writeNotes(cfg *Config) []string {
	notes := []string{
		"durability (--sync " + cfg.Sync.Promise(),
		"every write run makes one pass over the file, and its child then reads the file back from the device (O_DIRECT, which first writes back dirty pages) and checks every 512-byte sector's offset, pass and bytes: checksum ok means the device holds what was written",
		"before each write run the runner fsyncs the file, so that no run pays for the write-back of the one before it",
	}
	notes[0] += ")"
	if cfg.Pattern == engine.Append {
		notes = append(notes, "append runs start from an empty file (truncated and fsynced before each run), so each run allocates the blocks it writes")
	}
	return notes
}

// prepareWrite readies path for a write run: its dirty pages written
// back, and for the append pattern its content dropped (the file
// truncated to 0), both made durable.
func prepareWrite(path string, empty bool) error {
	fd, err := sys.Open(path, sys.O_WRONLY)
	if err != nil {
		return err
	}
	defer sys.Close(fd)
	if empty {
		if err := sys.Ftruncate(fd, 0); err != nil {
			return &fs.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	if err := sys.Fsync(fd); err != nil {
		return &fs.PathError{Op: "fsync", Path: path, Err: fmt.Errorf("before a write run: %w", err)}
	}
	return nil
}

// measureWrite is a child's write run: one pass of the writer over the
// file with a seeded source, then the file read back from the device
// and checked.
func measureWrite(ctx context.Context, req *childRequest, resp *childResponse) *childResponse {
	fail := func(err error) *childResponse {
		resp.Error = err.Error()
		resp.NotSupported = isNotSupported(err)
		return resp
	}
	w, err := engine.LookupWriter(req.Engine)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	p, err := w.PrepareWrite(req.Job)
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	job := req.Job.WithDefaults()
	src := wdata.New(job.Seed, job.BlockSize)
	src.SetPass(1)
	resp.SetupNs = int64(time.Since(t0))
	base := int64(0)
	if job.Pattern == engine.Append {
		var st sys.Stat_t
		if err := sys.Stat(job.Path, &st); err != nil {
			return fail(err)
		}
		base = st.Size
	}
	inst, err := startInstruments(req)
	if err != nil {
		return fail(err)
	}
	defer inst.stop()
	var syncLat *metrics.Histogram
	err = measurePasses(resp, 0, false, "file", func() (pass, error) {
		st, err := p.Run(ctx, src)
		if err != nil {
			return pass{}, err
		}
		tot := st.Total()
		resp.Syncs += tot.Syncs
		syncLat = tot.SyncLat
		return pass{bytes: tot.Bytes, items: tot.Blocks, syscalls: tot.Syscalls, lat: tot.Lat, notes: st.Notes}, nil
	})
	if err != nil {
		return fail(err)
	}
	if err := inst.finish(resp); err != nil {
		return fail(err)
	}
	resp.Checksum = ""
	if syncLat != nil && syncLat.Count() > 0 {
		resp.SyncLat = syncLat.Buckets()
	}
	direct, err := src.Verify(job.Path, base, resp.Bytes)
	if err != nil {
		resp.Mismatch = errors.Is(err, wdata.ErrMismatch)
		return fail(err)
	}
	resp.Verified = "dropped"
	if direct {
		resp.Verified = "direct"
	}
	return resp
}
