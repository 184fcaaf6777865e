package iopath

import (
	"fmt"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
)

// decide is Auto: auto.Decide measures what the rules need (residency
// with mincore on a sample) and applies them. Tests replace it to steer
// the choice.
var decide = func(w auto.Workload) auto.Choice { return auto.Decide(w, autoEngines()) }

// autoEngines is what internal/auto is told about the engines and the
// kernel: it sits under engine, batch and features and may not import
// them.
func autoEngines() auto.Engines {
	return auto.Engines{File: engine.Names(), Many: batch.Names(), IOURing: features.HaveOps}
}

// fsFor is the filesystem of fd when the machine profile has a rule that
// may cover a file of kind and size ("" otherwise, and Auto looks no
// further): the one fstatfs a profile costs, and only for the sizes it
// covers.
func fsFor(fd int, kind string, size int64) string {
	if !profile.Active().Covers(kind, size) {
		return ""
	}
	typ, err := sys.FstatfsType(fd)
	if err != nil {
		return ""
	}
	return machine.FSName(typ)
}

// ruleWithEngine is the Choice's Rule when WithEngine decided.
const ruleWithEngine = "with-engine"

// plan returns how call c reads w: Auto's choice, or the engine WithEngine
// named with that engine's defaults, and then the values the options set
// explicitly on top. An explicit engine that cannot run here is an error
// wrapping ErrNotSupported; Auto never chooses one (auto.Choose falls back
// and its Reason says why).
func plan(c call, o *options, w auto.Workload) (auto.Choice, error) {
	var ch auto.Choice
	if o.engine != "" {
		if err := o.checkEngine(c); err != nil {
			return ch, err
		}
		ch = auto.Choice{Engine: o.engine, Rule: ruleWithEngine, Reason: fmt.Sprintf("WithEngine(%q) in the code", o.engine)}
		if c != callReadFiles {
			ch.Workers = 1
		}
	} else {
		w.Direct = o.direct
		ch = decide(w)
		ch.Engine = fitEngine(c, ch.Engine, o.direct)
	}
	if o.workers > 0 {
		ch.Workers = o.workers
	}
	if o.blockSize > 0 {
		ch.BlockSize = o.blockSize
	}
	if o.queueDepth > 0 {
		ch.QueueDepth = o.queueDepth
	}
	if c != callReadFiles {
		ch.Workers = max(1, ch.Workers)
	}
	return ch, nil
}

// checkEngine returns plan's error for an explicit engine that cannot
// run here. The shortcuts that do not ask plan (an empty file, a file of
// a pseudo-filesystem, read with read(2)) call it first, so that
// WithEngine("io_uring") fails the same way whatever the file.
func (o *options) checkEngine(c call) error {
	if o.engine == "io_uring" {
		if err := uringUsable(c); err != nil {
			return fmt.Errorf("iopath: %s: %w", c, err)
		}
	}
	return nil
}

// fitEngine maps an engine Auto chose to one call c implements: readv
// reads a contiguous destination exactly as pread does (one buffer per
// call is the whole chunk), and a File's positioned reads are pread,
// io_uring or mmap (File's mmap backend). mmap is never used with
// O_DIRECT.
func fitEngine(c call, name string, direct bool) string {
	if c == callReadFiles {
		return name
	}
	if name == "mmap" && direct {
		return "pread"
	}
	for _, n := range c.engines() {
		if n == name {
			return name
		}
	}
	return "pread"
}

// uringUsable returns nil when call c can read through io_uring here, or
// an error wrapping ErrNotSupported with the probe's reason (the probe's
// own error when it ran short of a resource: see engine.UringError).
func uringUsable(c call) error {
	var ops []string
	if c != callReadFiles {
		ops = []string{"READ"} // batch checks its own opcodes
	}
	return engine.UringError(features.HaveOps(ops...))
}
