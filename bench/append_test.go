package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMeasureAppend: a short run of every method with one and four
// writers gives every row durable records, read back whole; the os.File
// methods sync once a record, a Log at most once (its commits are never
// more than its records), and the files are gone afterwards.
func TestMeasureAppend(t *testing.T) {
	dir := t.TempDir()
	var tracked []string
	cfg := AppendConfig{Dir: dir, Writers: []int{1, 4}, Duration: 200 * time.Millisecond, Runs: 1,
		ChildCommand: []string{os.Args[0]},
		TrackTemp: func(p string) func() {
			tracked = append(tracked, p)
			return func() {}
		}}
	rep, err := MeasureAppend(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind() != KindAppend || rep.Append == nil || rep.Append.RecordSizeBytes != DefaultAppendRecord {
		t.Fatalf("kind %q, append %+v", rep.Kind(), rep.Append)
	}
	if len(rep.Results) != 2*len(AppendMethods()) {
		t.Fatalf("%d rows, want %d", len(rep.Results), 2*len(AppendMethods()))
	}
	for i, r := range rep.Results {
		name := r.Engine + " ×" + itoa(r.Workers)
		if want := AppendMethods()[i%4]; r.Engine != want {
			t.Errorf("row %d is %s, want %s", i, r.Engine, want)
		}
		if r.Error != "" {
			if r.Engine == AppendLogURing && strings.Contains(r.Error, "not supported") {
				t.Logf("%s: %s", name, r.Error)
				continue
			}
			t.Errorf("%s: %s", name, r.Error)
			continue
		}
		if len(r.Runs) != 1 || r.Runs[0].Blocks == 0 || r.IOPS <= 0 || r.BytesPerS <= 0 {
			t.Errorf("%s: no records: %+v", name, r.Runs)
			continue
		}
		run := r.Runs[0]
		if r.ChecksumOK == nil || !*r.ChecksumOK || run.Verified != "dropped" {
			t.Errorf("%s: not verified (checksum_ok %v, verified %q)", name, r.ChecksumOK, run.Verified)
		}
		if run.Bytes != run.Blocks*DefaultAppendRecord || r.Pattern != "append" || r.BS != DefaultAppendRecord {
			t.Errorf("%s: %d bytes for %d records, pattern %q, bs %d", name, run.Bytes, run.Blocks, r.Pattern, r.BS)
		}
		if r.LatP50Ns <= 0 || r.LatP99Ns < r.LatP50Ns || r.CPUUsPerRecord <= 0 {
			t.Errorf("%s: P50 %d P99 %d CPU %.1fµs/record", name, r.LatP50Ns, r.LatP99Ns, r.CPUUsPerRecord)
		}
		switch r.Engine {
		case AppendFileFsync, AppendFileFdatasync:
			if run.Syncs != run.Blocks || r.SyncsPerRecord != 1 {
				t.Errorf("%s: %d syncs for %d records", name, run.Syncs, run.Blocks)
			}
		default:
			if run.Syncs < 1 || run.Syncs > run.Blocks || r.SyncsPerRecord > 1 {
				t.Errorf("%s: %d commits for %d records", name, run.Syncs, run.Blocks)
			}
		}
		t.Logf("%s: %d records, %.0f/s, %.3f syncs/record, P99 %v", name, run.Blocks, r.IOPS, r.SyncsPerRecord, time.Duration(r.LatP99Ns))
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("left in the directory: %v", left)
	}
	if len(tracked) != 2*len(AppendMethods()) {
		t.Errorf("%d files tracked, want one a run", len(tracked))
	}
	// The report survives JSON.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Kind() != KindAppend {
		t.Errorf("round trip: %v, kind %q", err, back.Kind())
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestAppendConfigErrors: settings out of range are refused before
// anything runs.
func TestAppendConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  AppendConfig
		want string
	}{
		{"writers 0", AppendConfig{Writers: []int{0}}, "writers 0 out of range"},
		{"writers twice", AppendConfig{Writers: []int{8, 8}}, "named twice"},
		{"too many writers", AppendConfig{Writers: []int{MaxAppendWriters + 1}}, "out of range"},
		{"negative duration", AppendConfig{Duration: -time.Second}, "duration"},
		{"small record", AppendConfig{RecordSize: 8}, "record size"},
		{"large record", AppendConfig{RecordSize: MaxAppendRecord + 1}, "record size"},
		{"method", AppendConfig{Methods: []string{"file+msync"}}, `unknown append method "file+msync"`},
		{"method twice", AppendConfig{Methods: []string{AppendLogPwrite, AppendLogPwrite}}, "named twice"},
		{"runs", AppendConfig{Runs: MaxRuns + 1}, "runs"},
		{"cap", AppendConfig{MaxBytes: 1 << 20}, "cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	good := AppendConfig{}
	if err := good.Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if !slices.Equal(good.Writers, []int{1, 8, 64}) || good.RecordSize != 4096 || good.Runs != 3 {
		t.Errorf("defaults %+v", good)
	}
}

// TestMeasureAppendDir: a missing directory, a file or a pseudo-file
// system is an error before any run.
func TestMeasureAppendDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	for _, dir := range []string{filepath.Join(t.TempDir(), "missing"), file, "/proc"} {
		rep, err := MeasureAppend(context.Background(), AppendConfig{Dir: dir, Duration: time.Millisecond})
		if err == nil || rep != nil {
			t.Errorf("%s: report %v, error %v", dir, rep != nil, err)
		}
	}
}

// TestAppendCheck: the read-back check counts every record lost,
// damaged, repeated, out of order or torn, and passes exactly what
// each writer acknowledged.
func TestAppendCheck(t *testing.T) {
	const size = 64
	recs := func(c *appendCheck, order [][2]int) [][]byte {
		var out [][]byte
		for _, ws := range order {
			r := slices.Clone(c.tmpl[ws[0]])
			stamp(r, ws[0], uint32(ws[1]))
			out = append(out, r)
		}
		return out
	}
	good := [][2]int{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 2}}
	acked := []int64{3, 2}
	for _, tc := range []struct {
		name   string
		edit   func(c *appendCheck, rs [][]byte) [][]byte
		acked  []int64
		errors int64
	}{
		{"whole", nil, acked, 0},
		{"one lost in the middle", func(_ *appendCheck, rs [][]byte) [][]byte { return slices.Delete(rs, 3, 4) }, acked, 1},
		{"tail lost", func(_ *appendCheck, rs [][]byte) [][]byte { return rs[:3] }, acked, 2},
		{"byte flipped", func(_ *appendCheck, rs [][]byte) [][]byte { rs[2][20] ^= 1; return rs }, acked, 1},
		{"torn", func(_ *appendCheck, rs [][]byte) [][]byte { rs[4] = rs[4][:size/2]; return rs }, acked, 1},
		{"ends disagree", func(_ *appendCheck, rs [][]byte) [][]byte { rs[1][size-1] ^= 1; return rs }, acked, 1},
		{"repeated", func(_ *appendCheck, rs [][]byte) [][]byte { return slices.Insert(rs, 1, rs[0]) }, acked, 1},
		{"unknown writer", func(c *appendCheck, rs [][]byte) [][]byte {
			r := slices.Clone(rs[0])
			stamp(r, 7, 0)
			return append(rs, r)
		}, acked, 1},
		{"never acknowledged", nil, []int64{2, 2}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newAppendCheck(2, size)
			rs := recs(c, good)
			if tc.edit != nil {
				rs = tc.edit(c, rs)
			}
			for _, r := range rs {
				c.add(r)
			}
			err := c.finish(tc.acked)
			if tc.errors == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrRecordsLost) || !strings.Contains(err.Error(), fmt.Sprintf(": %d records of ", tc.errors)) {
				t.Errorf("error %v, want %d records lost or corrupted", err, tc.errors)
			}
		})
	}
}

// TestAppendReadBack: what an os.File method wrote is read back record
// by record from the file, and a byte changed on disk after the fact
// is caught.
func TestAppendReadBack(t *testing.T) {
	for _, m := range AppendMethods() {
		t.Run(m, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			a, err := openAppender(m, path)
			if err != nil {
				if m == AppendLogURing && isNotSupported(err) {
					t.Skipf("io_uring cannot run here: %v", err)
				}
				t.Fatal(err)
			}
			const size, n = 100, 50
			c := newAppendCheck(1, size)
			rec := slices.Clone(c.tmpl[0])
			for i := range n {
				stamp(rec, 0, uint32(i))
				if err := a.append(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
			}
			if syncs, _ := a.counts(); syncs < 1 || syncs > n {
				t.Errorf("%d syncs for %d records", syncs, n)
			}
			if err := a.close(n); err != nil {
				t.Fatal(err)
			}
			if err := a.readBack(size, c.add); err != nil {
				t.Fatal(err)
			}
			if err := c.finish([]int64{n}); err != nil {
				t.Fatal(err)
			}
			// Damage one payload byte in the file.
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			i := len(b) - size/2 // in the last record's payload
			b[i] ^= 0x40
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			c = newAppendCheck(1, size)
			err = a.readBack(size, c.add)
			if err == nil {
				err = c.finish([]int64{n})
			}
			if err == nil {
				t.Error("a damaged record passed the check")
			}
			t.Logf("damaged: %v", err)
		})
	}
}
