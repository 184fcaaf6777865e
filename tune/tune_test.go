package tune

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoMachineProfile()
	goleak.VerifyTestMain(m)
}

func mkTrial(kind string, size int64, winner string, ways ...Way) Trial {
	return Trial{Kind: kind, Size: size, Rounds: Rounds, Ways: ways, Winner: winner}
}

var (
	def     = Way{Name: "auto", Engine: "pread", Workers: 2, Ratio: 1}
	pread1  = Way{Name: "pread×1", Engine: "pread", Workers: 1, Ratio: 1.2}
	mmap2   = Way{Name: "mmap×2", Engine: "mmap", Workers: 2, Ratio: 1.3}
	slowest = Way{Name: "read×1", Engine: "read", Workers: 1, Ratio: 0.5}
)

// Each winning size covers up to the log-scale midpoints to its
// neighbours, the smallest from half its size and the largest without
// bound; neighbours with the same winner merge; a size the default kept
// has no rule; one worker per core is kept as PerCore.
func TestRulesFor(t *testing.T) {
	trials := []Trial{
		mkTrial(WholeFile, 64<<10, "pread×1", def, pread1, slowest),
		mkTrial(WholeFile, 256<<10, "pread×1", def, pread1),
		mkTrial(WholeFile, 1<<20, "", def, pread1),
		mkTrial(WholeFile, 4<<20, "mmap×2", def, mmap2),
		mkTrial(Blocks, 64<<10, "", def),
		mkTrial(Blocks, 256<<20, "mmap×2", def, mmap2),
	}
	// Blocks' trials are 64 KiB and 256 MiB only: the midpoint is 4 MiB.
	got := rulesFor(trials, 2)
	want := []Rule{
		{Kind: WholeFile, MinSize: 32 << 10, MaxSize: 512 << 10, Engine: "pread", Workers: 1},
		{Kind: WholeFile, MinSize: 2 << 20, MaxSize: 0, Engine: "mmap", Workers: profile.PerCore},
		{Kind: Blocks, MinSize: 4 << 20, MaxSize: 0, Engine: "mmap", Workers: profile.PerCore},
	}
	if len(got) != len(want) {
		t.Fatalf("rules %+v, want %+v", got, want)
	}
	for i := range want {
		g := got[i]
		g.Why = ""
		if g != want[i] {
			t.Errorf("rule %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if w := got[0].Why; !strings.Contains(w, "at 64KiB pread×1 1.20× Auto's default (pread×2), median of 5 rounds; at 256KiB") {
		t.Errorf("a merged rule's Why: %q", w)
	}
	// With 4 cores, a winner of 2 workers is 2, not one per core.
	if r := rulesFor([]Trial{mkTrial(Blocks, 1<<20, "mmap×2", def, mmap2)}, 4); len(r) != 1 || r[0].Workers != 2 {
		t.Errorf("2 workers on 4 cores: %+v", r)
	}
	if r := rulesFor([]Trial{mkTrial(Blocks, 1<<20, "", def, mmap2)}, 2); len(r) != 0 {
		t.Errorf("no winner, rules %+v", r)
	}
}

// A way replaces the default only when its median ratio is past Margin
// and it is faster in all rounds but one; the fastest such way wins; the
// control never does.
func TestWinner(t *testing.T) {
	ways := []Way{def, {Name: Control, Ratio: 1.02}, {Name: "a", Ratio: 1.06}, {Name: "b", Ratio: 1.3}, {Name: "c", Ratio: 1.5}, {Name: "d", Ratio: 1.4}}
	ratios := [][]float64{{1, 1, 1, 1, 1}, {1.02, 1.02, 1.02, 1.02, 1.02}, {1.06, 1.06, 1.06, 1.06, 1.06},
		{1.3, 1.3, 1.3, 0.9, 1.3}, {1.5, 1.5, 0.5, 0.5, 1.5}, {1.4, 1.4, 1.4, 1.4, 1.0}}
	if w := winner(ways, ratios); w != "d" {
		t.Errorf("winner %q, want d (a is within the margin from the control's 1.02, c slower in 2 rounds of 5, d faster than b; the control never wins)", w)
	}
	if w := winner(ways[:4], ratios[:4]); w != "b" {
		t.Errorf("winner %q of default, control, a, b; want b (slower in one round only)", w)
	}
	if w := winner(ways[:3], ratios[:3]); w != "" {
		t.Errorf("winner %q within the margin", w)
	}
}

func TestFitSizes(t *testing.T) {
	r := &Result{}
	got := fitSizes(r, MaxSize, 1<<40, 1<<40)
	if len(got) != len(Sizes) || len(r.Notes) != 0 {
		t.Errorf("room for all: %v, notes %v", got, r.Notes)
	}
	r = &Result{}
	got = fitSizes(r, DefaultMaxSize, 1<<40, 1<<40)
	if len(got) != len(Sizes)-1 || len(r.Notes) != 0 {
		t.Errorf("by default: %v, notes %v (the sizes past the default are not noted)", got, r.Notes)
	}
	r = &Result{}
	got = fitSizes(r, 1<<20, 1<<40, 1<<40)
	if len(got) != 3 || got[2] != 1<<20 || len(r.Notes) != 4 {
		t.Errorf("max 1 MiB: %v, notes %v", got, r.Notes)
	}
	r = &Result{}
	got = fitSizes(r, MaxSize, 3<<20, 1<<40)
	if len(got) != 3 || !strings.Contains(r.Notes[0], "4MiB: the directory's filesystem has 3MiB free") {
		t.Errorf("3 MiB free: %v, notes %v", got, r.Notes)
	}
	r = &Result{}
	got = fitSizes(r, MaxSize, 1<<40, 64<<20)
	if len(got) != 5 || !strings.Contains(r.Notes[0], "of memory available") {
		t.Errorf("64 MiB of memory: %v, notes %v", got, r.Notes)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A short real run: every kind and size fitting under MaxSize is
// measured against the default, the trial files are gone afterwards, the
// process's profile is back, and Save writes, merges and refuses as it
// says.
func TestRunAndSave(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	before := profile.Current()
	var calls int
	tracked := map[string]bool{}
	r, err := Run(context.Background(), dir, Options{Budget: MinBudget, MaxSize: 256 << 10,
		Progress: func(done, total int, what string) {
			calls++
			if done > total || what == "" {
				t.Errorf("progress %d of %d, %q", done, total, what)
			}
		},
		Temp: func(p string) func() { tracked[p] = true; return func() { delete(tracked, p) } },
	})
	if err != nil {
		t.Fatal(err)
	}
	if profile.Current() != before {
		t.Error("Run did not restore the process's profile")
	}
	if left := entries(t, dir); len(left) != 0 {
		t.Errorf("trial files left behind: %v", left)
	}
	if len(tracked) != 0 || calls == 0 {
		t.Errorf("tracked files not forgotten: %v; %d progress calls", tracked, calls)
	}
	if len(r.Trials) != 4 || r.Filesystem == "" || r.Key != profile.CurrentKey() {
		t.Fatalf("result %+v", r)
	}
	for _, tr := range r.Trials {
		if tr.Ways[0].Name != "auto" || tr.Ways[1].Name != Control || len(tr.Ways) < 4 || tr.Rounds != Rounds {
			t.Errorf("trial %s %d: ways %+v", tr.Kind, tr.Size, tr.Ways)
		}
		for _, w := range tr.Ways {
			if w.Rate <= 0 || w.Ratio <= 0 {
				t.Errorf("trial %s %d: way %+v not measured", tr.Kind, tr.Size, w)
			}
		}
		if tr.Winner != "" && find(tr.Ways, tr.Winner).Ratio <= 1+Margin {
			t.Errorf("trial %s %d: winner %s within the margin", tr.Kind, tr.Size, tr.Winner)
		}
	}
	t.Logf("%+v", r.Rules)

	path := filepath.Join(t.TempDir(), "sub", "p.json")
	p, err := Save(r, path, "test", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Filesystems[r.Filesystem]
	if p.Path() != path || s == nil || len(s.Trials) != 4 || s.IopathVersion != "test" || time.Since(s.Tuned) > time.Minute {
		t.Fatalf("saved %+v", p)
	}
	if _, err := Save(r, path, "test", false, nil); !errors.Is(err, ErrTuned) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a second Save without replace: %v", err)
	}
	other := *r
	other.Filesystem = "xfs-elsewhere"
	if p, err = Save(&other, path, "test", false, nil); err != nil || len(p.Filesystems) != 2 {
		t.Errorf("another filesystem's section is added: %v, %+v", err, p)
	}
	if p, err = Save(r, path, "test", true, nil); err != nil || len(p.Filesystems) != 2 {
		t.Errorf("replace keeps the other sections: %v, %+v", err, p)
	}
	if left := entries(t, filepath.Dir(path)); len(left) != 1 {
		t.Errorf("beside the profile: %v", left)
	}
	if err := os.WriteFile(path, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(r, path, "test", false, nil); err == nil || !strings.Contains(err.Error(), "not a machine profile") {
		t.Errorf("over a broken file without replace: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "not json" {
		t.Error("the broken file was changed")
	}
	if p, err = Save(r, path, "test", true, nil); err != nil || len(p.Filesystems) != 1 {
		t.Errorf("over a broken file with replace: %v, %+v", err, p)
	}
}

// Ctrl-C: Run stops with ctx's error and leaves nothing behind.
func TestRunCancel(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	_, err := Run(ctx, dir, Options{Budget: MinBudget, MaxSize: 4 << 20, Progress: func(done, total int, what string) {
		if n++; n == 12 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if left := entries(t, dir); len(left) != 0 {
		t.Errorf("trial files left behind: %v", left)
	}
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := Run(context.Background(), missing, Options{}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing dir: %v", err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), file, Options{}); err == nil || !strings.Contains(err.Error(), file+": not a directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := Run(context.Background(), dir, Options{Budget: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a budget of 1ms: %v", err)
	}
}

// TestCheckSaveNotRegular: a profile path naming a FIFO or a directory is
// refused before any measuring, --force or not, and without advising
// --force.
func TestCheckSaveNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, dir} {
		for _, replace := range []bool{false, true} {
			err := CheckSave(path, dir, replace)
			if !errors.Is(err, sys.ErrNotRegular) || strings.Contains(err.Error(), "--force") {
				t.Errorf("CheckSave(%s, replace %v) = %v", path, replace, err)
			}
		}
	}
}

// TestRunPseudoFS: /proc is no filesystem to tune; the error says so.
func TestRunPseudoFS(t *testing.T) {
	if _, err := Run(context.Background(), "/proc", Options{}); err == nil || !strings.Contains(err.Error(), "/proc: a pseudo-filesystem (proc)") {
		t.Errorf("tune /proc: %v", err)
	}
}
