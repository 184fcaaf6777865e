package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/perf"
)

// The columns a bench Doc (a file's or a tree's) gains from what the runs
// recorded beside their figures: where the CPU went (bench --perf: a
// column per kind of perf.Breakdown, shown without --wide) and what the
// Go runtime did (always recorded by iopath rows: columns for --wide).
// Every cell carries each successful run's value, as the other figures
// do, for compare and gobench.

// perfKeyPrefix starts the key of a breakdown column: perf_copy_pct.
const perfKeyPrefix = "perf_"

// perfTitles are the breakdown columns' short titles, by kind.
var perfTitles = map[perf.Kind]string{
	perf.User: "user", perf.Runtime: "runtime", perf.Syscall: "syscall", perf.Copy: "copy",
	perf.Fault: "fault", perf.IOUring: "uring", perf.Poll: "poll", perf.Net: "net", perf.Kernel: "kernel",
}

// perfMeaning says what counts under each kind (perf/classify.go's rules).
var perfMeaning = map[perf.Kind]string{
	perf.User:    "the program's own code and libraries, the copies it makes itself (runtime.memmove) included",
	perf.Runtime: "the Go runtime: scheduler, garbage collector, allocation, entering and leaving syscalls",
	perf.Syscall: "syscall entry and exit: the kernel's entry code and the user-space stubs",
	perf.Copy:    "the kernel's copy routines (copy_to_user, rep_movs_alternative, memcpy) at the leaf",
	perf.Fault:   "page-fault handling, whatever code faulted (a copy that faults is the fault's)",
	perf.IOUring: "io_uring's own machinery: submission, completion, task work, io-wq",
	perf.Poll:    "readiness polling: epoll, poll and select, the readiness checks they make (sock_poll) and the wakeups that mark a file ready",
	perf.Net:     "the network stack: sockets, TCP/IP, loopback, softirq receive",
	perf.Kernel:  "the rest of the kernel: VFS, page cache, file systems, scheduler (a wait's context switch), locks",
}

// perfKey is the key of kind k's breakdown column.
func perfKey(k perf.Kind) string { return perfKeyPrefix + k.String() + "_pct" }

// perfKindOf is the kind whose breakdown column has key, if it is one.
func perfKindOf(key string) (perf.Kind, bool) {
	s, ok := strings.CutPrefix(key, perfKeyPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "_pct")
	if !ok {
		return 0, false
	}
	return perf.ParseKind(s)
}

// perfKinds are the kinds some row of rows spent CPU in, in report
// order; none when no row has a breakdown.
func perfKinds(rows []*bench.Result) []perf.Kind {
	var out []perf.Kind
	for _, k := range perf.Kinds() {
		for _, res := range rows {
			if res.Perf != nil && res.Error == "" && res.Perf.Share(k) > 0 {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// pctText shows a share in percent: 37%, <1% for a share that rounds to
// none, 0% for none.
func pctText(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.5:
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", v)
}

// perfCols are the breakdown's columns: kind k's share of the samples in
// percent, for each of kinds; a row without a recording (a fio twin) has
// none.
func perfCols(kinds []perf.Kind) []benchCol {
	var cols []benchCol
	for _, k := range kinds {
		cols = append(cols, benchCol{Column{Key: perfKey(k), Title: perfTitles[k], Unit: "%"},
			func(res *bench.Result, ok []bench.Run) Cell {
				if res.Perf == nil {
					return Figure(math.NaN())
				}
				c := runsCell(100*res.Perf.Share(k), ok, func(x bench.Run) float64 {
					if x.Perf == nil || x.Perf.Samples == 0 {
						return math.NaN()
					}
					return 100 * x.Perf.Share(k)
				})
				c.Text = pctText(c.Value)
				return c
			}})
	}
	return cols
}

// perfLegend explains the breakdown's columns.
func perfLegend(l *[]Field, kinds []perf.Kind) {
	if len(kinds) == 0 {
		return
	}
	key := perfTitles[kinds[0]]
	if len(kinds) > 1 {
		key += "…" + perfTitles[kinds[len(kinds)-1]]
	}
	*l = append(*l, Field{key, "where the CPU went (--perf): % of perf's CPU samples (kernel and Go frames) of the runs " +
		"together; a sample counts once, under the first that applies: a kernel copy routine at the leaf, page-fault " +
		"handling anywhere in the stack, then the first frame from the leaf up that belongs to io_uring, readiness polling, the network " +
		"stack, syscall entry/exit or another kernel path, else the user-space leaf"})
	for _, k := range kinds {
		*l = append(*l, Field{perfTitles[k], perfMeaning[k]})
	}
}

// hasRuntime reports whether some row of rows recorded the Go runtime's
// figures.
func hasRuntime(rows []*bench.Result) bool {
	for _, res := range rows {
		if res.Runtime != nil {
			return true
		}
	}
	return false
}

// runtimeCols are the Go runtime's figures (--wide): each a median over
// the runs, with each run's.
func runtimeCols() []benchCol {
	col := func(key, title string, better Better, get func(*metrics.Runtime) int64, text func(int64) string) benchCol {
		return benchCol{Column{Key: key, Title: title, Better: better, Wide: true},
			func(res *bench.Result, ok []bench.Run) Cell {
				if res.Runtime == nil {
					return Figure(math.NaN())
				}
				c := runsCell(float64(get(res.Runtime)), ok, func(x bench.Run) float64 {
					if x.Runtime == nil {
						return math.NaN()
					}
					return float64(get(x.Runtime))
				})
				c.Text = text(int64(math.Round(c.Value)))
				return c
			}}
	}
	wait := func(ns int64) string {
		if ns <= 0 {
			return "0"
		}
		return latency(ns)
	}
	return []benchCol{
		col("threads_max", "threads", Neutral, func(r *metrics.Runtime) int64 { return int64(r.ThreadsMax) }, count),
		col("threads_started", "thr+", Neutral, func(r *metrics.Runtime) int64 { return int64(r.ThreadsStarted) }, count),
		col("goroutines_max", "goroutines", Neutral, func(r *metrics.Runtime) int64 { return int64(r.GoroutinesMax) }, count),
		col("sched_wait_ns", "sched wait", Lower, func(r *metrics.Runtime) int64 { return r.SchedWaitNs }, wait),
		col("gc_cycles", "GC", Lower, func(r *metrics.Runtime) int64 { return r.GCCycles }, count),
	}
}

// runtimeWide is what the "--wide adds" legend says of runtimeCols.
const runtimeWide = "; threads (the most OS threads the run's process had, io_uring's iou-wrk workers included), " +
	"thr+ (threads started during the run), goroutines (the most at once), sched wait (time runnable goroutines " +
	"waited for a thread, summed over the run), GC (garbage collections in the run): each the median over the runs"
