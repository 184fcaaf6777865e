package advise

import (
	"fmt"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
)

// AutoCheck is what iopath's Auto (internal/auto.Choose: what
// iopath.ReadFiles, iopath.Scan and iopath.ReadFile use by default) picks
// for this data, and whether the trial agrees: a disagreement points at a
// rule that is miscalibrated for this machine or data.
type AutoCheck struct {
	// The pick for the data as it is now (the residency measured before
	// the trial).
	AutoPick
	// States is, for each cache state measured, Auto's pick for data in
	// that state (residency 1 or 0) and the trial's verdict on it.
	States []AutoState `json:"states"`
	// Agrees is the verdict in the recommendation's cache state.
	Agrees bool   `json:"agrees"`
	Text   string `json:"text"`
}

// AutoPick is one choice of Auto's.
type AutoPick struct {
	Candidate
	Label      string `json:"label"`
	QueueDepth int    `json:"queue_depth,omitempty"`      // 0: the engine's default
	BlockSize  int    `json:"block_size_bytes,omitempty"` // 0: the engine's default
	Rule       string `json:"rule"`
	Reason     string `json:"reason"`
}

// AutoState is Auto's pick for data in one cache state against the trial's
// winner in that state.
type AutoState struct {
	Cache Cache    `json:"cache"`
	Pick  AutoPick `json:"pick"`
	// Ratio is the pick's measured ratio against the baseline (0: not
	// measured); WinnerLabel and WinnerRatio are the trial's winner's.
	Ratio       float64 `json:"ratio"`
	WinnerLabel string  `json:"winner_label"`
	WinnerRatio float64 `json:"winner_ratio"`
	// Agrees is set when the pick is the winner or measured within 5% of
	// it; Measured is false when the pick could not be measured (Text
	// says why).
	Agrees   bool   `json:"agrees"`
	Measured bool   `json:"measured"`
	Text     string `json:"text"`
}

// autoPicks asks internal/auto what it would pick for the inventory with
// the data as it is now (residency < 0: unknown), and with the data
// cached and not cached.
func autoPicks(inv *Inventory, residency float64) (now AutoPick, byState map[Cache]AutoPick) {
	choose := func(res float64) AutoPick {
		w := auto.Workload{Resident: res}
		if inv.Kind == ManyFiles {
			w.Kind, w.Paths, w.Size = auto.ManyFiles, inv.Paths, inv.Median
		} else {
			w.Kind, w.Path, w.Size = auto.Blocks, inv.Paths[0], inv.Bytes
		}
		ch := auto.Choose(w, auto.CurrentEnv(auto.Engines{File: engine.Names(), Many: batch.Names(), IOURing: features.HaveOps}))
		c := Candidate{Engine: ch.Engine, Workers: max(1, ch.Workers)}
		return AutoPick{Candidate: c, Label: c.Label(), QueueDepth: ch.QueueDepth, BlockSize: ch.BlockSize,
			Rule: ch.Rule, Reason: ch.Reason}
	}
	if residency < 0 {
		residency = -1
	}
	return choose(residency), map[Cache]AutoPick{Warm: choose(1), Cold: choose(0)}
}

// checkAuto compares Auto's picks with the trial's winners.
func checkAuto(now AutoPick, byState map[Cache]AutoPick, residency float64, rec Recommendation, ms []Measurement, phases []Phase) *AutoCheck {
	a := &AutoCheck{AutoPick: now, States: []AutoState{}}
	state := "as it is now"
	if residency >= 0 {
		state = fmt.Sprintf("as it is now, %.0f%% cached", residency*100)
	}
	a.Text = fmt.Sprintf("iopath's Auto would pick %s (rule %s) for the data %s.", phrase(now.Candidate), now.Rule, state)
	for _, c := range []Cache{Warm, Cold} {
		usable := false
		for _, ph := range phases {
			if ph.Cache == c && ph.Skipped == "" && ph.Valid {
				usable = true
			}
		}
		if !usable {
			continue
		}
		win, _, ok := pick(ms, c)
		if !ok {
			continue
		}
		s := verdict(c, byState[c], win, ms)
		a.States = append(a.States, s)
		a.Text += "\n  " + s.Text
		if c == rec.Cache {
			a.Agrees = s.Agrees
		}
	}
	return a
}

// verdict judges Auto's pick p for cache state c against the winner.
func verdict(c Cache, p AutoPick, win *Measurement, ms []Measurement) AutoState {
	s := AutoState{Cache: c, Pick: p, WinnerLabel: win.Label, WinnerRatio: win.Ratio}
	head := fmt.Sprintf("%s: it picks %s (rule %s)", describe(c), phrase(p.Candidate), p.Rule)
	if p.Candidate == win.Candidate {
		s.Agrees, s.Measured, s.Ratio = true, true, win.Ratio
		s.Text = head + ": the trial agrees."
		return s
	}
	m := find(ms, c, p.Candidate)
	if m == nil {
		why := "it was not among the candidates"
		for i := range ms {
			if ms[i].Cache == c && ms[i].Candidate == p.Candidate && ms[i].Skipped != "" {
				why = ms[i].Skipped
			}
		}
		s.Text = fmt.Sprintf("%s, which the trial could not measure: %s.", head, why)
		return s
	}
	s.Measured, s.Ratio = true, m.Ratio
	if m.Rate*margin >= win.Rate {
		s.Agrees = true
		s.Text = fmt.Sprintf("%s, within 5%% of the fastest here (%s against %s for %s): the trial agrees.",
			head, ratio(m.Ratio), ratio(win.Ratio), phrase(win.Candidate))
		return s
	}
	s.Text = fmt.Sprintf("%s, which measured %s against %s for %s: that rule may be miscalibrated for this machine and data.",
		head, ratio(m.Ratio), ratio(win.Ratio), phrase(win.Candidate))
	return s
}
