package bench

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/iopath/iopath/engine"
)

// lossyWriter wraps pwrite and changes a byte of the second block after
// the source made it, so that only reading the file back can tell.
type lossyWriter struct{ engine.Writer }

func (lossyWriter) Name() string { return "test-lossy" }
func (l lossyWriter) PrepareWrite(j engine.Job) (engine.PreparedWrite, error) {
	p, err := l.Writer.PrepareWrite(j)
	if err != nil {
		return nil, err
	}
	return lossyRun{p}, nil
}

type lossyRun struct{ engine.PreparedWrite }

func (l lossyRun) Run(ctx context.Context, src engine.Source) (*engine.Stats, error) {
	return l.PreparedWrite.Run(ctx, lossySource{src})
}

// lossySource corrupts the second block, as a device that lost or
// garbled a write would.
type lossySource struct{ engine.Source }

func (s lossySource) Fill(w int, off int64, b []byte) error {
	if err := s.Source.Fill(w, off, b); err != nil {
		return err
	}
	if off == int64(len(b)) { // the second block
		b[100] ^= 1
	}
	return nil
}

func init() {
	pw, err := engine.LookupWriter("pwrite")
	if err != nil {
		panic(err)
	}
	engine.RegisterWriter(lossyWriter{pw})
}

func TestMeasureWrite(t *testing.T) {
	for _, c := range []struct {
		pattern engine.Pattern
		sync    string
		want    string
	}{
		{engine.Sequential, "end", "write"},
		{engine.Random, "every:4", "randwrite"},
		{engine.Append, "dsync", "append"},
	} {
		t.Run(c.want, func(t *testing.T) {
			path := testFile(t, 1<<20)
			sy, err := engine.ParseSync(c.sync)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Measure(context.Background(), Config{
				Path: path, Write: true, Pattern: c.pattern, Sync: sy, Runs: 2,
				Engines:    []string{"write", "pwrite", "pwritev", "mmap", "io_uring"},
				BlockSizes: []int{64 << 10}, QueueDepths: []int{4},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 5 {
				t.Fatalf("%d rows, want one per writer", len(rep.Results))
			}
			for _, r := range rep.Results {
				if r.Error != "" {
					if strings.HasPrefix(r.Error, "not applicable") || strings.Contains(r.Error, "not supported") {
						continue // mmap appends, write(2) appends with 1 worker are fine
					}
					t.Errorf("%s: %s", r.Engine, r.Error)
					continue
				}
				if r.Pattern != c.want || r.Sync != c.sync || r.Consume != "" {
					t.Errorf("%s: pattern %q sync %q consume %q", r.Engine, r.Pattern, r.Sync, r.Consume)
				}
				if r.ChecksumOK == nil || !*r.ChecksumOK || r.Runs[0].Verified != "direct" {
					t.Errorf("%s: not verified: %v %q", r.Engine, r.ChecksumOK, r.Runs[0].Verified)
				}
				if r.BytesPerS <= 0 || r.Runs[0].Bytes != 1<<20 || r.Runs[0].Passes != 1 {
					t.Errorf("%s: %v bytes/s, %d bytes in %d passes", r.Engine, r.BytesPerS, r.Runs[0].Bytes, r.Runs[0].Passes)
				}
				wantSyncs := map[string]int64{"end": 1, "every:4": 4, "dsync": 0}[c.sync]
				if r.Engine == "mmap" && c.sync == "dsync" {
					wantSyncs = 16
				}
				if r.Engine == "io_uring" && c.sync == "every:4" {
					// One FSYNC covers every group completed since the last.
					wantSyncs = min(max(r.SyncsPerPass, 1), 4)
				}
				if r.SyncsPerPass != wantSyncs {
					t.Errorf("%s: %d syncs per pass, want %d", r.Engine, r.SyncsPerPass, wantSyncs)
				}
				if wantSyncs > 0 && r.SyncLatP50Ns <= 0 {
					t.Errorf("%s: no sync latency", r.Engine)
				}
			}
			if !strings.Contains(strings.Join(rep.Notes, "\n"), "durability (--sync "+c.sync) {
				t.Errorf("no durability note: %q", rep.Notes)
			}
			if st, err := os.Stat(path); err != nil || st.Size() != 1<<20 {
				t.Errorf("file after the runs: %v, %v", st, err)
			}
		})
	}
}

func TestMeasureWriteMismatch(t *testing.T) {
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Write: true, Engines: []string{"pwrite", "test-lossy"}, Runs: 1, Caches: []Cache{Warm},
	})
	if !errors.Is(err, ErrChecksum) {
		for _, r := range rep.Results {
			t.Logf("%s: %q %v %+v", r.Engine, r.Error, r.ChecksumOK, r.Runs)
		}
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	for _, r := range rep.Results {
		ok := r.ChecksumOK != nil && *r.ChecksumOK
		if ok != (r.Engine == "pwrite") {
			t.Errorf("%s: checksum ok %v, error %q", r.Engine, r.ChecksumOK, r.Error)
		}
		if r.Engine == "test-lossy" && !strings.Contains(r.Error, "differs from the data written") {
			t.Errorf("test-lossy: error %q does not say the data differs", r.Error)
		}
	}
}

func TestWriteConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Path: "x", Pattern: engine.Append}, "append pattern writes"},
		{Config{Path: "x", Sync: engine.Sync{Mode: engine.SyncEnd}}, "applies to writes only"},
		{Config{Path: "x", Write: true, Sync: engine.Sync{Mode: engine.SyncDirect}, Caches: []Cache{Warm}}, "cache state direct"},
		{Config{Path: "x", Write: true, Engines: []string{"readv"}}, "unknown write engine"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
