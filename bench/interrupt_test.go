package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// checkInterrupted checks a report an interrupt stopped after its first
// run: every planned row is there; the first has its one run, figures and
// a note; the others were not run and say so, with no figures.
func checkInterrupted(t *testing.T, rep *Report, err error, rows int) {
	t.Helper()
	if !errors.Is(err, context.Canceled) || rep == nil {
		t.Fatalf("err = %v, report %v; want context.Canceled with the report", err, rep != nil)
	}
	if !rep.Interrupted {
		t.Error("the report does not say it was interrupted")
	}
	if len(rep.Results) != rows {
		t.Fatalf("%d rows, want all %d planned", len(rep.Results), rows)
	}
	for i, r := range rep.Results {
		if !r.Interrupted {
			t.Errorf("row %d (%s %s) is not marked interrupted", i, r.Engine, r.Cache)
		}
		if i == 0 {
			if r.Error != "" || len(r.Runs) != 1 || r.BytesPerS <= 0 {
				t.Errorf("first row: error %q, %d runs, %v B/s; want its one run's figures", r.Error, len(r.Runs), r.BytesPerS)
			}
			if !strings.Contains(strings.Join(r.Notes, "\n"), "interrupted: 1 of 2 runs made") {
				t.Errorf("first row's notes %q do not say it was cut short", r.Notes)
			}
			continue
		}
		if r.Error != InterruptedError || len(r.Runs) != 0 || r.BytesPerS != 0 {
			t.Errorf("row %d (%s %s): error %q, %d runs, %v B/s; want %q and nothing else", i, r.Engine, r.Cache,
				r.Error, len(r.Runs), r.BytesPerS, InterruptedError)
		}
	}
}

// An interrupt keeps every planned row in the report: the rows it did not
// reach say "interrupted" instead of showing zeros or vanishing.
func TestMeasureInterrupted(t *testing.T) {
	path := testFile(t, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep, err := Measure(ctx, Config{
		Path: path, Engines: []string{"pread", "read"}, Caches: []Cache{Warm, Cold}, Runs: 2,
		// Called before each run: the second one is interrupted.
		Progress: func(done, total int, what string) {
			if done == 1 {
				cancel()
			}
		},
	})
	checkInterrupted(t, rep, err, 4)
}

func TestMeasureTreeInterrupted(t *testing.T) {
	dir := testTree(t, 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep, err := MeasureTree(ctx, TreeConfig{
		Dir: dir, Engines: []string{"raw", "readfile"}, Caches: []Cache{Warm, Cold}, Runs: 2,
		Progress: func(done, total int, what string) {
			if done == 1 {
				cancel()
			}
		},
	})
	checkInterrupted(t, rep, err, 4)
}

// A run in which nothing could be measured is a failure, whose error says
// why each row could not run.
func TestMeasureNothingMeasured(t *testing.T) {
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"mmap"}, Caches: []Cache{Direct}, Runs: 1,
	})
	if !errors.Is(err, ErrNothingMeasured) || rep == nil || !strings.Contains(err.Error(), "mmap: not applicable: mmap cannot bypass the page cache") {
		t.Fatalf("err = %v (report %v); want ErrNothingMeasured giving mmap's reason, with the report", err, rep != nil)
	}
	rep, err = Measure(context.Background(), Config{
		Path: path, Engines: []string{"mmap", "pread"}, Caches: []Cache{Direct}, Runs: 1,
	})
	if err != nil || rep == nil {
		t.Fatalf("with pread measured: %v", err)
	}
}
