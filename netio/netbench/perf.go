package netbench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/outfile"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/perf"
)

// Bench's perf recordings (Options.PerfDir): each server child is
// recorded by a perf record attached to its pid (perf.Attach) from when
// it is up until it is stopped or restarted, with sampling switched on
// only for each measured window. Where the window starts and ends only
// the load generator knows, past its dial ramp and its warm-up, so the
// load child and the bench shake hands at both ends (WindowSyncFlag): the
// child says "start" on file descriptor 3 and waits for a line on its
// stdin, which the bench writes once perf has switched sampling on; the
// same at the end. When the recording ends its windows are cut out of it
// (perf.Samples.Window): a pprof profile per run (PerfFiles names them),
// a breakdown of the server's CPU per run and per point, and a call tree
// per point.

// PerfExt is the suffix of the profiles Bench writes into PerfDir.
const PerfExt = ".pb.gz"

// flamePrune is the share of a point's samples below which a call is
// left out of its flame tree (its time stays in its caller's).
const flamePrune = 0.005

// PerfName is the base name of the profile of one run (run counts from 1)
// of engine at one point: "io_uring-pipeline16-1KiB-c1000-run2.pb.gz".
// A mode's characters other than letters, digits and "_" are dropped
// ("pipeline:16" is "pipeline16"), so that the name is safe in any file
// system and its fields stay apart.
func PerfName(engine, mode string, size, conns, run int) string {
	return perfName(engine, mode, size, conns, run, "")
}

// perfName is PerfName with tag after the connections: "-loss10pct" for
// a level of --loss ("io_uring-pingpong-64B-c1000-loss10pct-run2.pb.gz").
func perfName(engine, mode string, size, conns, run int, tag string) string {
	sz := units.FormatSize(int64(size))
	if strings.Contains(sz, ".") {
		sz = strconv.Itoa(size) + "B"
	}
	return fmt.Sprintf("%s-%s-%s-c%d%s-run%d%s", safeName(engine), safeName(mode), sz, conns, tag, run, PerfExt)
}

// lossTag is the profiles' tag of a --loss level: "-loss10pct".
func lossTag(loss float64) string {
	return "-loss" + strconv.FormatFloat(100*loss, 'f', -1, 64) + "pct"
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return -1
	}, s)
}

// PerfFiles lists the profiles a Bench of o writes into PerfDir, one per
// run of every engine at every point (nil without PerfDir). Call it after
// Validate.
func (o *Options) PerfFiles() []string {
	if o.PerfDir == "" {
		return nil
	}
	tags := []string{o.perfTag}
	if len(o.Loss) > 0 {
		tags = tags[:0]
		for _, l := range o.Loss {
			tags = append(tags, lossTag(l))
		}
	}
	var out []string
	for _, tag := range tags {
		for _, m := range o.Modes {
			for _, c := range o.Conns {
				for _, sz := range o.Sizes {
					for run := 1; run <= o.Runs; run++ {
						for _, e := range o.Engines {
							out = append(out, filepath.Join(o.PerfDir, perfName(e, m, sz, c, run, tag)))
						}
					}
				}
			}
		}
	}
	return out
}

// refuseProfiles fails, unless PerfReplace, when one of the profiles
// Bench would write (PerfFiles) exists.
func (o *Options) refuseProfiles() error {
	if o.PerfReplace {
		return nil
	}
	for _, p := range o.PerfFiles() {
		if _, err := os.Lstat(p); err == nil {
			return &fs.PathError{Op: "net bench", Path: p, Err: outfile.ErrExists}
		}
	}
	return nil
}

// preparePerf checks that perf can record here, makes PerfDir, refuses
// (unless PerfReplace) when one of the profiles exists, and returns the
// report's note.
func (o *Options) preparePerf() (string, error) {
	info, err := perf.Probe()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.PerfDir, 0o755); err != nil {
		return "", err
	}
	if err := o.refuseProfiles(); err != nil {
		return "", err
	}
	return fmt.Sprintf("recorded (--perf): %s, of the server process only (every thread, io_uring's workers included), "+
		"during the measured windows only; each run's profile is in %s (go tool pprof -http :8080 FILE); "+
		"the figures include perf's sampling, which adds to the server's CPU per request (measured on a 2-vCPU VM: docs/net.md): "+
		"compare them with figures recorded the same way", info.Describe(o.PerfFreq), o.PerfDir), nil
}

// window is one measured window of a recording: the run it belongs to
// (its point, its number from 0, its index in the point's Runs) and when
// sampling was on, CLOCK_MONOTONIC ns.
type window struct {
	k      key
	run    int
	idx    int
	t0, t1 int64
}

// recording is one server child's perf record.
type recording struct {
	rec *perf.Recording
	// err is why the recording failed (attach, a switch on or off): later
	// windows are not tried, and its runs say so.
	err     error
	windows []window
}

// usable says that the next window can be recorded.
func (r *recording) usable() bool { return r != nil && r.rec != nil && r.err == nil }

// attachPerf starts a perf record of s, perf itself pinned to cpus (the
// load generator's: the server's core is left to the server). A failure
// is kept in the recording, and the runs on this server carry it.
func attachPerf(ctx context.Context, o *Options, s *server, cpus []int) {
	r := &recording{}
	s.perf = r
	err := onCPUs(cpus, func() error {
		var err error
		r.rec, err = perf.Attach(ctx, s.pid, perf.Options{Track: o.TrackTempDir, Freq: o.PerfFreq})
		return err
	})
	if err != nil {
		r.err = fmt.Errorf("perf record -p %d: %w", s.pid, err)
	}
}

// perfError is a run's PerfError when its window could not be recorded.
func (r *recording) perfError() string {
	if r.err != nil {
		return "not recorded: " + r.err.Error()
	}
	return ""
}

// perfState is Bench's across its servers: the call trees of the points.
type perfState struct {
	o      *Options
	flames map[key]*perf.Flame
	logf   func(format string, args ...any)
}

// finish ends s's recording and turns each of its windows into its run's
// profile and breakdown, adding it to its point's call tree. When the
// bench was interrupted it only removes the recording: no profile is
// written. Every failure is put on the runs it touches, never returned.
func (ps *perfState) finish(ctx context.Context, s *server, points map[key]*netresult.Point) {
	r := s.perf
	if r == nil || r.rec == nil {
		return
	}
	defer func() {
		r.rec.Close()
		r.windows = nil // a server finished twice (it could not restart) has none left
	}()
	if ctx.Err() != nil || len(r.windows) == 0 {
		return
	}
	fail := func(err error) {
		msg := err.Error()
		for _, w := range r.windows {
			run := &points[w.k].Runs[w.idx]
			if run.PerfError == "" {
				run.PerfError = msg
			}
		}
		ps.logf("%s server: perf: %s", s.engine, msg)
	}
	if err := r.rec.Stop(); err != nil {
		fail(err)
		return
	}
	samples, err := r.rec.Read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fail(err)
		}
		return
	}
	for _, w := range r.windows {
		if ctx.Err() != nil {
			return
		}
		p := points[w.k]
		run := &p.Runs[w.idx]
		ws := samples.Window(w.t0, w.t1)
		b := ws.Breakdown()
		run.Perf = &b
		if ps.flames[w.k] == nil {
			ps.flames[w.k] = perf.NewFlame()
		}
		ps.flames[w.k].Add(ws)
		path := filepath.Join(ps.o.PerfDir, perfName(w.k.engine, w.k.mode, w.k.size, w.k.conns, w.run+1, ps.o.perfTag))
		if err := outfile.Write(path, ps.o.PerfReplace, ps.o.TrackTemp, ws.WriteProfile); err != nil {
			run.PerfError = "profile: " + err.Error()
			ps.logf("%s server: perf: %v", s.engine, err)
			continue
		}
		run.PerfProfile = path
	}
}

// setFlames puts each point's pruned call tree on it.
func (ps *perfState) setFlames(points map[key]*netresult.Point) {
	for k, f := range ps.flames {
		points[k].Flame = f.Prune(flamePrune)
	}
}
