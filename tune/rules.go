package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/outfile"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
)

// rulesFor turns trials into rules: each trial with a winner covers the
// sizes from halfway (on a log scale) to the trial below to halfway to the
// trial above — the smallest from half its size, the largest with no
// upper bound — and neighbours with the same winner merge. A way of one
// worker per core (gomaxprocs workers, above 1) is kept as
// profile.PerCore, so that the rule follows GOMAXPROCS.
func rulesFor(trials []Trial, gomaxprocs int) []Rule {
	var rules []Rule
	for _, kind := range []string{WholeFile, Blocks} {
		var ts []Trial
		for _, t := range trials {
			if t.Kind == kind {
				ts = append(ts, t)
			}
		}
		for i, t := range ts {
			if t.Winner == "" {
				continue
			}
			w := find(t.Ways, t.Winner)
			lo := t.Size / 2
			if i > 0 {
				lo = midpoint(ts[i-1].Size, t.Size)
			}
			var hi int64
			if i < len(ts)-1 {
				hi = midpoint(t.Size, ts[i+1].Size)
			}
			workers := w.Workers
			if workers == min(gomaxprocs, profile.MaxCoreWorkers) && workers > 1 {
				workers = profile.PerCore
			}
			why := fmt.Sprintf("at %s %s %.2f× Auto's default (%s), median of %d rounds",
				units.FormatSize(t.Size), w.Name, w.Ratio, DefaultLabel(t.Ways[0]), t.Rounds)
			if n := len(rules); n > 0 {
				last := &rules[n-1]
				if last.Kind == kind && last.MaxSize == lo && last.Engine == w.Engine && last.Workers == workers {
					last.MaxSize = hi
					last.Why += "; " + why
					continue
				}
			}
			rules = append(rules, Rule{Kind: kind, MinSize: lo, MaxSize: hi, Engine: w.Engine, Workers: workers, Why: why})
		}
	}
	return rules
}

// midpoint is the geometric mean of a and b, rounded down to a multiple of
// 4 KiB.
func midpoint(a, b int64) int64 {
	m := int64(math.Sqrt(float64(a) * float64(b)))
	return m &^ 4095
}

func find(ways []Way, name string) Way {
	for _, w := range ways {
		if w.Name == name {
			return w
		}
	}
	return Way{}
}

// ProfilePath is where Save writes this machine's profile: the file
// IOPATH_PROFILE names, or the user's cache directory's
// (profile.DefaultPath). It is an error when IOPATH_PROFILE is "off".
func ProfilePath() (string, error) {
	v := strings.TrimSpace(os.Getenv(profile.Env))
	switch v {
	case "off":
		return "", fmt.Errorf("%s=off: no machine profile to write (unset it, or name a file)", profile.Env)
	case "":
		return profile.DefaultPath(profile.CurrentKey())
	}
	return v, nil
}

// ErrTuned is the cause when the profile already has a section for the
// filesystem and replacing it was not asked for.
var ErrTuned = errors.New("already tuned")

// Save writes r into the machine profile at path (ProfilePath), as the
// section of r's filesystem: the other filesystems' sections of a valid
// profile are kept. The file is written beside path and renamed into
// place. Without replace, Save refuses (ErrTuned, or outfile.ErrExists)
// to replace a section already there, or a file that is not a valid
// profile of this machine (another machine's, a version past, or not a
// profile at all), so that nothing is lost unasked. version is iopath's,
// recorded in the section; track as for outfile.Write.
func Save(r *Result, path, version string, replace bool, track outfile.Track) (*Profile, error) {
	p, err := base(path, r.Key, r.Filesystem, replace)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(r.Dir)
	if err != nil {
		abs = r.Dir
	}
	p.Filesystems[r.Filesystem] = &Section{
		Tuned: timeNow(), Dir: abs, IopathVersion: version, GOMAXPROCS: r.GOMAXPROCS,
		Rules: r.Rules, Trials: r.Trials,
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	err = outfile.Write(path, true, track, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(p)
	})
	if err != nil {
		return nil, err
	}
	return profile.Load(path, r.Key)
}

// CheckSave reports the error Save would return for a result measured in
// dir (its filesystem's section already there, or a file at path that is
// not a valid profile here, without replace), so that a caller learns it
// before the measuring, not after.
func CheckSave(path, dir string, replace bool) error {
	typ, err := sys.StatfsType(dir)
	if err != nil {
		return err
	}
	_, err = base(path, profile.CurrentKey(), machine.FSName(typ), replace)
	return err
}

// base is the profile at path that Save adds the section of filesystem fs
// to: the valid one there, or a new one (none there, or replace); an
// error when that would lose something without replace.
func base(path string, k Key, fsName string, replace bool) (*Profile, error) {
	p, err := profile.Load(path, k)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p = &profile.Profile{Version: profile.Version, Key: k}
	case errors.Is(err, sys.ErrNotRegular):
		// A device, FIFO or directory: never replaced, --force or not.
		return nil, err
	case err != nil && !replace:
		return nil, fmt.Errorf("%w (use --force to replace it)", err)
	case err != nil:
		p = &profile.Profile{Version: profile.Version, Key: k}
	}
	if p.Filesystems == nil {
		p.Filesystems = map[string]*Section{}
	}
	if old := p.Filesystems[fsName]; old != nil && !replace {
		return nil, &fs.PathError{Op: "tune", Path: path, Err: fmt.Errorf("%w: %s on %s (%s); use --force to replace it",
			ErrTuned, fsName, old.Tuned.Format("2006-01-02 15:04"), old.Dir)}
	}
	return p, nil
}

// timeNow is the clock of a section's Tuned time (tests set it).
var timeNow = time.Now

// DefaultLabel names a trial's default way: its engine and workers, and
// Auto's rule ("read×1 small-file").
func DefaultLabel(w Way) string {
	l := fmt.Sprintf("%s×%d", w.Engine, w.Workers)
	if w.Rule != "" {
		l += " " + w.Rule
	}
	return l
}
