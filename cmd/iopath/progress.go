package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress draws bars on stderr when stderr is a terminal, and nothing
// otherwise (so that logs and pipes stay clean).
type progress struct {
	w   io.Writer
	tty bool
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

// bytes returns a callback for a byte-count task, or nil without a tty.
func (p *progress) bytes(what string) func(done, total int64) {
	if !p.tty {
		return nil
	}
	return func(done, total int64) {
		if p.bar == nil {
			p.bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(what),
				progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionThrottle(100e6),
			)
		}
		p.bar.Set64(done)
	}
}

// steps returns a callback for a task of counted steps, or nil without a tty.
func (p *progress) steps() func(done, total int, what string) {
	if !p.tty {
		return nil
	}
	return func(done, total int, what string) {
		if p.bar == nil {
			p.bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetWidth(30),
				progressbar.OptionShowCount(),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionSetPredictTime(true),
			)
		}
		p.bar.Describe(what)
		p.bar.Set(done)
	}
}

// done finishes and clears the current bar.
func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
		p.bar = nil
	}
}
