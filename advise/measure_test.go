package advise

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/engine"
)

// fakeTrial tests the runner without I/O: each pass "reads" 100 files in
// about a millisecond.
type fakeTrial struct {
	cands  []Candidate
	failOn string  // this engine's passes fail
	res    float64 // what residency reports
	// cutTo, when set, is what warm cuts the sample to (as the many-files
	// trial does when warming runs out of time): later passes read that
	// many files, with another sum.
	cutTo int64
	cut   bool

	mu           sync.Mutex
	drops, warms int
	passes       map[Candidate]int
	log          []string // "drop" and candidate labels, in order
}

func (f *fakeTrial) kind() Kind              { return ManyFiles }
func (f *fakeTrial) candidates() []Candidate { return f.cands }
func (f *fakeTrial) residency() (float64, bool) {
	return f.res, true
}

func (f *fakeTrial) warm(context.Context, time.Time) (string, error) {
	f.mu.Lock()
	f.warms++
	f.cut = f.cutTo > 0
	f.mu.Unlock()
	return "", nil
}

func (f *fakeTrial) drop(bool) error {
	f.mu.Lock()
	f.drops++
	f.log = append(f.log, "drop")
	f.mu.Unlock()
	return nil
}

func (f *fakeTrial) open(c Candidate) (passer, error) {
	if c.Engine == "io_uring" {
		return nil, &engine.NotSupportedError{What: "io_uring", Reason: "not here"}
	}
	return &fakePasser{f: f, c: c}, nil
}

type fakePasser struct {
	f *fakeTrial
	c Candidate
}

func (p *fakePasser) close() {}

func (p *fakePasser) pass(ctx context.Context, deadline time.Time) (passResult, error) {
	p.f.mu.Lock()
	p.f.passes[p.c]++
	p.f.log = append(p.f.log, p.c.Label())
	p.f.mu.Unlock()
	if p.c.Engine == p.f.failOn {
		return passResult{}, errors.New("boom")
	}
	time.Sleep(time.Millisecond)
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if p.f.cut {
		return passResult{files: p.f.cutTo, bytes: p.f.cutTo << 12, whole: true, sum: 7}, nil
	}
	return passResult{files: 100, bytes: 100 << 12, whole: true, sum: 42}, nil
}

func newFake(res float64) *fakeTrial {
	return &fakeTrial{
		cands:  []Candidate{{"readfile", 1}, {"raw", 1}, {"raw", 2}, {"io_uring", 1}, {"pool", 128}},
		failOn: "pool",
		res:    res,
		passes: map[Candidate]int{},
	}
}

func TestPhaseCold(t *testing.T) {
	f := newFake(0.02)
	var progress []string
	r := &runner{t: f, progress: func(s string) { progress = append(progress, s) }, firstErr: map[string]error{}}
	ph, err := r.phase(context.Background(), Cold, time.Now().Add(700*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !ph.Valid || ph.Residency != 0.02 || ph.Rounds < 2 || ph.Skipped != "" {
		t.Errorf("phase %+v", ph)
	}
	if f.warms != 0 {
		t.Error("a cold phase warmed the data")
	}
	// Every cold pass is preceded by a drop.
	for i, e := range f.log {
		if e != "drop" && (i == 0 || f.log[i-1] != "drop") {
			t.Fatalf("pass %d (%s) not right after a drop: %v", i, e, f.log[:i+1])
		}
	}
	for _, m := range r.ms {
		switch m.Engine {
		case "io_uring":
			if !strings.Contains(m.Skipped, "not here") {
				t.Errorf("io_uring: skipped %q, want the reason", m.Skipped)
			}
		case "pool":
			if m.Skipped != "failed: boom" || len(m.Rounds) != 0 {
				t.Errorf("pool: skipped %q with %d rounds, want failed: boom and none", m.Skipped, len(m.Rounds))
			}
		default:
			if len(m.Rounds) != ph.Rounds || m.Rate <= 0 || m.Skipped != "" {
				t.Errorf("%s: %d rounds, rate %v, skipped %q", m.Label, len(m.Rounds), m.Rate, m.Skipped)
			}
		}
	}
	// The order rotates: each round starts with the next candidate.
	var firsts []string
	seen := map[string]bool{}
	for _, msg := range progress {
		label, round, ok := strings.Cut(msg, " cold, round ")
		if ok && !seen[round[:1]] {
			seen[round[:1]] = true
			firsts = append(firsts, label)
		}
	}
	if len(firsts) < 2 || firsts[0] != "readfile" || firsts[1] != "raw" {
		t.Errorf("rounds start with %v, want readfile, raw, ...", firsts)
	}
}

func TestPhaseColdDropDidNotTake(t *testing.T) {
	f := newFake(0.9)
	r := &runner{t: f, progress: func(string) {}, firstErr: map[string]error{}}
	ph, err := r.phase(context.Background(), Cold, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if ph.Valid || ph.Residency != 0.9 {
		t.Errorf("phase %+v: a drop that left 90%% cached must make it invalid", ph)
	}
	// firstDrop retried for up to a tenth of the phase.
	if f.drops < 2 {
		t.Errorf("%d drops: the first drop was not retried", f.drops)
	}
}

func TestPhaseWarm(t *testing.T) {
	f := newFake(1)
	r := &runner{t: f, progress: func(string) {}, firstErr: map[string]error{}}
	ph, err := r.phase(context.Background(), Warm, time.Now().Add(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !ph.Valid || f.warms != 1 || f.drops != 0 {
		t.Errorf("phase %+v, %d warms, %d drops", ph, f.warms, f.drops)
	}
	// Too little time: skipped, not failed.
	ph, err = r.phase(context.Background(), Warm, time.Now().Add(time.Millisecond))
	if err != nil || ph.Skipped == "" {
		t.Errorf("no time: %v, %+v", err, ph)
	}
	// Cancelled: the error is ctx's.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.phase(ctx, Warm, time.Now().Add(300*time.Millisecond)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// A sample cut by warming is a different set of files: its passes are not
// compared with the whole sample's (that was reported as every engine
// delivering wrong bytes when warming ran out of time on a busy machine).
func TestPhaseCutSampleIsNotAMismatch(t *testing.T) {
	f := newFake(1)
	f.failOn, f.cutTo = "", 40
	r := &runner{t: f, progress: func(string) {}, firstErr: map[string]error{}}
	if _, err := r.phase(context.Background(), Cold, time.Now().Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.phase(context.Background(), Warm, time.Now().Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for _, m := range r.ms {
		if m.Mismatch != 0 {
			t.Errorf("%s: %d checksum mismatches after the sample was cut", m.Label, m.Mismatch)
		}
	}
}
