package netbench

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/iopath/iopath/netio/netresult"
)

// TestWritev: every way at each part count, each result with its runs'
// figures, and the report says how it was run.
func TestWritev(t *testing.T) {
	rep, err := Writev(context.Background(), WritevOptions{Parts: []int{2}, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Started.IsZero() || rep.SchemaVersion != netresult.WritevSchemaVersion || rep.Config.Rounds != 2 ||
		!slices.Equal(rep.Config.Parts, []int{2}) || !slices.Equal(rep.Config.Ways, netresult.WritevWays()) {
		t.Errorf("report header %+v", rep)
	}
	if len(rep.Results) != len(netresult.WritevWays()) {
		t.Fatalf("%d results, want one per way: %+v", len(rep.Results), rep.Results)
	}
	for _, r := range rep.Results {
		if r.Err != "" {
			continue // io_uring where it is not supported
		}
		if !r.Verified || r.Runs != 2 || len(r.PerRun) != 2 || r.CPUNsPerResp <= 0 {
			t.Errorf("%s: %+v", r.Way, r)
		}
	}
}

// TestSideInterrupted: a cancelled context ends either bench with its
// error; FileServe without a Command is refused before anything runs.
func TestSideInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep, err := Writev(ctx, WritevOptions{Parts: []int{2}}); !errors.Is(err, context.Canceled) || rep == nil || len(rep.Results) != 0 {
		t.Errorf("Writev cancelled: %v, %+v", err, rep)
	}
	if _, err := FileServe(context.Background(), FileServeOptions{}); err == nil {
		t.Error("FileServe without a Command: no error")
	}
}
