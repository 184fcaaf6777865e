package advise

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// margin is how much faster than the baseline a candidate must be to be
// recommended over it: run-to-run noise on a shared machine is about
// ±5%, so a smaller gain is not worth a change of code.
const margin = 1.05

// Recommendation is the advice.
type Recommendation struct {
	Candidate
	Label string `json:"label"`
	// Cache is the state the choice was measured in: the state the data
	// is in now, unless that state could not be measured.
	Cache Cache `json:"cache"`
	// Ratio is the choice's rate over the baseline's in Cache.
	Ratio float64 `json:"ratio"`
	// Baseline names what Ratio compares with: "os.ReadFile" (many files)
	// or "plain read" (one file: the read engine, one worker).
	Baseline string `json:"baseline"`
	// KeepBaseline says that nothing beat the baseline by 5% or more.
	KeepBaseline bool `json:"keep_baseline"`
	// Text is the advice in one or two sentences.
	Text string `json:"text"`
	// Other is the winner in the other cache state, when it is a
	// different candidate (nil otherwise, or when that state was not
	// measured).
	Other *OtherState `json:"other,omitempty"`
}

// OtherState is the winner in the cache state the data is not in now.
type OtherState struct {
	Candidate
	Label        string  `json:"label"`
	Cache        Cache   `json:"cache"`
	Ratio        float64 `json:"ratio"`
	KeepBaseline bool    `json:"keep_baseline"`
	// ChoiceRatio is the recommended candidate's ratio in this state (0:
	// not measured).
	ChoiceRatio float64 `json:"choice_ratio"`
	Text        string  `json:"text"`
}

// ErrNoMeasurement is returned by Recommend when no cache state has both
// the baseline and another candidate measured.
var ErrNoMeasurement = errors.New("nothing could be measured")

// BaselineName is what the baseline is called in sentences and tables:
// os.ReadFile for many files, plain read for one.
func BaselineName(k Kind) string {
	if k == ManyFiles {
		return "os.ReadFile"
	}
	return "plain read"
}

// pick returns the winner among ms in cache c: the fastest, unless it is
// less than margin faster than the baseline, in which case the baseline.
// best is the fastest measured; ok is false when c has no baseline figure.
func pick(ms []Measurement, c Cache) (win, best *Measurement, ok bool) {
	var base *Measurement
	for i := range ms {
		m := &ms[i]
		if m.Cache != c || !m.Measured() {
			continue
		}
		if m.Baseline {
			base = m
		}
		if best == nil || m.Rate > best.Rate {
			best = m
		}
	}
	if base == nil {
		return nil, nil, false
	}
	if best.Ratio < margin {
		return base, best, true
	}
	return best, best, true
}

func find(ms []Measurement, c Cache, cand Candidate) *Measurement {
	for i := range ms {
		if ms[i].Cache == c && ms[i].Candidate == cand && ms[i].Measured() {
			return &ms[i]
		}
	}
	return nil
}

// Recommend picks the fastest candidate in the cache state the data is in
// now (now), from measurements whose Ratio is set, among the phases that
// are valid (a cold phase whose drop did not take is not). When now was not
// measured it picks from the other state, and says so. The inventory and
// residency (fraction of pages cached now, <0 unknown) word the sentence.
func Recommend(inv *Inventory, ms []Measurement, phases []Phase, now Cache, residency float64) (Recommendation, error) {
	valid := map[Cache]bool{}
	why := map[Cache]string{}
	for _, p := range phases {
		valid[p.Cache] = p.Valid && p.Skipped == ""
		why[p.Cache] = p.Skipped
		if p.Skipped == "" && !p.Valid {
			why[p.Cache] = "the cache state did not hold"
		}
	}
	use := func(c Cache) []Measurement {
		if !valid[c] {
			return nil
		}
		return ms
	}
	rc := now
	win, best, ok := pick(use(now), now)
	if !ok {
		rc = now.other()
		if win, best, ok = pick(use(rc), rc); !ok {
			return Recommendation{}, ErrNoMeasurement
		}
	}
	base := BaselineName(inv.Kind)
	rec := Recommendation{Candidate: win.Candidate, Label: win.Label, Cache: rc, Ratio: win.Ratio,
		Baseline: base, KeepBaseline: win.Baseline}

	var b strings.Builder
	if rec.KeepBaseline {
		fmt.Fprintf(&b, "keep %s: nothing else was 5%% faster on %s", baselineCode(inv.Kind), what(inv))
		fmt.Fprintf(&b, ", %s", stateNow(inv, now, residency))
		if best != nil && !best.Baseline {
			fmt.Fprintf(&b, "; the fastest, %s, reached %s", phrase(best.Candidate), ratio(best.Ratio))
		}
		b.WriteString(".")
	} else {
		fmt.Fprintf(&b, "use %s: %s %s on %s, %s.", phrase(win.Candidate), ratio(win.Ratio), base, what(inv), stateNow(inv, now, residency))
	}
	if rc != now {
		reason := why[now]
		if reason == "" {
			reason = "no figures"
		}
		fmt.Fprintf(&b, " Measured %s only: the %s trial gave no answer (%s).", describe(rc), now, reason)
	}

	oc := rc.other()
	if owin, obest, ok := pick(use(oc), oc); ok && owin.Candidate != win.Candidate {
		o := &OtherState{Candidate: owin.Candidate, Label: owin.Label, Cache: oc, Ratio: owin.Ratio,
			KeepBaseline: owin.Baseline}
		if m := find(ms, oc, win.Candidate); m != nil {
			o.ChoiceRatio = m.Ratio
		}
		switch {
		case o.KeepBaseline:
			o.Text = fmt.Sprintf("When the data is %s, nothing beats %s by 5%%", describe(oc), base)
			if obest != nil && !obest.Baseline {
				o.Text += fmt.Sprintf(" (the fastest, %s: %s)", phrase(obest.Candidate), ratio(obest.Ratio))
			}
			o.Text += "."
		default:
			o.Text = fmt.Sprintf("When the data is %s, %s is faster: %s %s %s", describe(oc), phrase(owin.Candidate), ratio(owin.Ratio), base, oc)
			if o.ChoiceRatio > 0 {
				o.Text += fmt.Sprintf(", where %s reaches %s", phrase(win.Candidate), ratio(o.ChoiceRatio))
			}
			o.Text += "."
		}
		rec.Other = o
	}
	rec.Text = b.String()
	return rec, nil
}

// baselineCode is the baseline as a user writes it.
func baselineCode(k Kind) string {
	if k == ManyFiles {
		return "os.ReadFile (batch engine `readfile`)"
	}
	return "plain read (engine `read`)"
}

// phrase names a candidate in a sentence: "`raw` with 2 workers".
func phrase(c Candidate) string {
	switch {
	case c.Engine == "readfile":
		return "`readfile` (os.ReadFile)"
	case c.Workers == 1:
		return fmt.Sprintf("`%s` with 1 worker", c.Engine)
	}
	return fmt.Sprintf("`%s` with %d workers", c.Engine, c.Workers)
}

func ratio(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

// describe says a cache state in words.
func describe(c Cache) string {
	if c == Warm {
		return "cached"
	}
	return "not cached"
}

// what names the data: "your 48,000 files (median 9 KiB)", "your 1 GiB file".
func what(inv *Inventory) string {
	if inv.Kind == OneFile {
		return "your " + humanSize(inv.Bytes) + " file"
	}
	n := count(inv.Files)
	if inv.AtLeast {
		n = "at least " + n
	}
	files := "files"
	if inv.Files == 1 {
		files = "file"
	}
	return fmt.Sprintf("your %s %s (median %s)", n, files, humanSize(inv.Median))
}

// stateNow says the cache state the data is in now.
func stateNow(inv *Inventory, now Cache, residency float64) string {
	if residency < 0 {
		return "taken as " + describe(now) + " (whether it is cannot be seen)"
	}
	return describe(now) + fmt.Sprintf(" now (%.0f%% of %s pages in memory)", residency*100, map[bool]string{true: "its", false: "their"}[inv.Kind == OneFile])
}

// count formats n with thousands separators: 48,000.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// humanSize formats a size for reading: "9 KiB", "1.5 GiB", "300 B".
func humanSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v {
			x := float64(n) / float64(u.v)
			if n%u.v == 0 || x >= 100 {
				return fmt.Sprintf("%.0f %s", x, u.s)
			}
			return fmt.Sprintf("%.1f %s", x, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}
