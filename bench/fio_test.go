package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/fio"
)

func TestMeasureWithFioTwins(t *testing.T) {
	info, err := fio.Find()
	if err != nil {
		t.Skipf("%v (CI installs it: apt-get install -y fio)", err)
	}
	path := testFile(t, 4<<20)
	engines := []string{"pread", "readv", "mmap", "null"}
	uring := features.Probe().IOURing.Available
	if uring {
		engines = append(engines, "io_uring")
	}
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: engines, Caches: []Cache{Warm, Cold}, Runs: 2, Consume: None, Fio: &info,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fio == nil || rep.Fio.Version == "" {
		t.Errorf("report does not say which fio ran: %+v", rep.Fio)
	}
	var fioRows int
	for i, r := range rep.Results {
		if r.Error != "" {
			t.Errorf("%s %s %s: %s", r.Tool, r.Engine, r.Cache, r.Error)
			continue
		}
		switch {
		case r.Tool == ToolFio:
			fioRows++
			ours := rep.Results[i-1]
			if ours.Tool != ToolIopath || ours.Engine != r.Twin || ours.Twin != r.Engine || ours.Cache != r.Cache {
				t.Errorf("fio row %s does not follow its twin: %s/%s", r.Engine, ours.Engine, ours.Twin)
			}
			if ours.VsFio <= 0 || r.BytesPerS <= 0 || len(r.Runs) != 2 || r.Syscalls != -1 || r.LatP50Ns <= 0 {
				t.Errorf("fio row %s %s: vs fio %v, %+v", r.Engine, r.Cache, ours.VsFio, r)
			}
			if r.Twin == "readv" && r.Engine != "vsync" {
				t.Errorf("readv's sequential twin is %s, want vsync (4 blocks per readv, as ours)", r.Engine)
			}
			if r.Cache == "warm" && r.Runs[0].ResidentBefore < 1 {
				t.Errorf("fio warm run started cold")
			}
		case r.Engine == "null":
			if r.Twin != "" || r.VsFio != 0 {
				t.Errorf("null has no fio twin: %+v", r)
			}
		}
	}
	if want := 2 * (len(engines) - 1); fioRows != want {
		t.Errorf("%d fio rows, want %d", fioRows, want)
	}
}

func TestFioNeedsConsumeNone(t *testing.T) {
	path := testFile(t, 1<<20)
	_, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread"}, Consume: Checksum, Fio: &fio.Info{Path: "fio"},
	})
	if err == nil || !strings.Contains(err.Error(), "consume") {
		t.Fatalf("err = %v, want a refusal naming consume", err)
	}
}

// When our engine cannot run here, its fio twin is not run either, and
// that is not a failure.
func TestFioTwinOfUnsupportedEngine(t *testing.T) {
	info, err := fio.Find()
	if err != nil {
		t.Skipf("%v (CI installs it: apt-get install -y fio)", err)
	}
	t.Setenv("IOPATH_DISABLE_IO_URING", "1")
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread", "io_uring"}, Caches: []Cache{Warm}, Runs: 2, Consume: None, Fio: &info,
	})
	if err != nil {
		t.Fatalf("err = %v; an engine that cannot run here is not a failure", err)
	}
	if len(rep.Results) != 4 {
		t.Fatalf("%d rows, want 4", len(rep.Results))
	}
	f := rep.Results[3]
	if f.Tool != ToolFio || !strings.Contains(f.Error, "not applicable") || len(f.Runs) != 0 {
		t.Errorf("fio io_uring row: %+v", f)
	}
}
