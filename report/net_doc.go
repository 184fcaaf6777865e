package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/perf"
)

// NetDoc maps a `net bench` report (the echo servers) into a Doc: the
// command, machine, pinning, matrix and runs in the header with the
// integrity verdict; one group per point of the matrix (mode, message
// size, connections), one row per engine in the order the command named
// them; the skipped engines, the report's notes and what went wrong in
// the notes. The headline figures are QPS, P99 and the server's CPU per
// request; every figure built from runs carries them, for compare's test.
func NetDoc(r *netresult.Report) *Doc {
	engines, groups := netPoints(r)
	d := &Doc{Kind: "net-bench", Title: "iopath net bench: echo servers"}
	for _, f := range []Field{
		{"command", r.Command},
		{"machine", netMachine(r.Machine)},
		{"io_uring", r.Machine.IOURing},
		{"version", netVersion(r)},
		{"pinning", netPinLine(r.Config)},
		{"matrix", netMatrixLine(r.Config)},
		{"runs", netRunsLine(r.Config)},
		{"address", r.Config.Addr},
	} {
		d.Header = append(d.Header, splitField(f)...)
	}
	if !r.Started.IsZero() {
		d.Header = append(d.Header, Field{"started", r.Started.Format("2006-01-02 15:04:05 MST")})
	}
	// A clean verdict is one line; a point not measured adds one.
	if verdict, clean := netVerdict(groups); clean && len(verdict) == 1 {
		d.Header = append(d.Header, Field{"integrity", verdict[0]})
	} else {
		d.Header = append(d.Header, Field{"integrity", "FAILED: see the notes"})
		d.Notes = append(d.Notes, verdict...)
	}
	for _, s := range r.Skipped {
		d.Notes = append(d.Notes, "skipped "+s.Engine+": "+oneLine(s.Reason))
	}
	for _, n := range r.Notes {
		d.Notes = append(d.Notes, oneLine(n))
	}
	for _, g := range groups {
		for _, p := range g {
			if p.PerfError != "" {
				d.Notes = append(d.Notes, "perf: "+p.Engine+" at "+keyOf(p).label()+": "+oneLine(p.PerfError))
			}
		}
	}
	if len(groups) == 0 {
		return d
	}
	refs := netRefsOf(r)
	if len(refs) > 0 {
		fields, notes := netVersus(engines, groups, refs[0])
		mf, mn := netMachinery(engines, groups, refs[0])
		for _, f := range append(fields, mf...) {
			d.Header = append(d.Header, splitField(f)...)
		}
		d.Notes = append(d.Notes, append(notes, mn...)...)
	}

	d.Columns = []Column{
		{Key: "engine", Title: "engine", Left: true},
		{Key: "qps", Title: "QPS", Unit: "1/s", Better: Higher, Spread: true, Headline: true},
		{Key: "p50_us", Title: "P50 µs", Unit: "µs", Better: Lower, Wide: true},
		{Key: "p99_us", Title: "P99 µs", Unit: "µs", Better: Lower, Headline: true},
		{Key: "p999_us", Title: "P99.9 µs", Unit: "µs", Better: Lower, Wide: true},
		{Key: "max_us", Title: "max µs", Unit: "µs", Better: Lower, Wide: true},
		{Key: "server_cpu_us_per_req", Title: "CPU µs/req", Unit: "µs", Better: Lower, Prec: 2, Spread: true, Headline: true},
	}
	// The first reference is in the table, the others behind --wide:
	// the table fits 100 columns.
	for i, ref := range refs {
		d.Columns = append(d.Columns, Column{Key: "server_cpu_vs_" + ref, Title: "vs " + ref, Unit: "×", Better: Lower, Prec: 2, Wide: i > 0})
	}
	// Under packet loss (--loss): the TCP retransmissions per 1,000
	// requests.
	// With a 0% level beside the others, QPS and P99 over the same
	// engine's at 0% loss.
	lossy := slices.ContainsFunc(r.Points, func(p netresult.Point) bool { return p.LossSet })
	vsNoLoss := lossy && slices.ContainsFunc(r.Points, func(p netresult.Point) bool { return p.LossSet && p.Loss == 0 }) &&
		slices.ContainsFunc(r.Points, func(p netresult.Point) bool { return p.LossSet && p.Loss > 0 })
	if vsNoLoss {
		d.Columns = append(d.Columns,
			Column{Key: "qps_vs_no_loss", Title: "QPS vs 0%", Unit: "×", Better: Higher, Prec: 2},
			Column{Key: "p99_vs_no_loss", Title: "P99 vs 0%", Unit: "×", Better: Lower, Prec: 1})
	}
	// With --recovery: the QPS before and during the loss window, and
	// the time QPS took to come back.
	recovery := slices.ContainsFunc(r.Points, func(p netresult.Point) bool { return p.LossWindowNs > 0 || p.Restart })
	reconnects := slices.ContainsFunc(r.Points, func(p netresult.Point) bool {
		return slices.ContainsFunc(p.Runs, func(r netresult.Run) bool { return r.Reconnects > 0 })
	})
	if recovery {
		d.Columns = append(d.Columns,
			Column{Key: "qps_before", Title: "QPS before", Unit: "1/s", Better: Higher},
			Column{Key: "qps_during", Title: "QPS during", Unit: "1/s", Better: Higher},
			Column{Key: "recovery_ms", Title: "recovery ms", Unit: "ms", Better: Lower, Headline: true})
	}
	restarts := slices.ContainsFunc(r.Points, func(p netresult.Point) bool { return p.Restart })
	if reconnects || restarts {
		d.Columns = append(d.Columns,
			Column{Key: "reconnects", Title: "reconnects"},
			Column{Key: "resent", Title: "resent"})
	}
	if restarts {
		d.Columns = append(d.Columns,
			Column{Key: "failed_conns", Title: "failed", Better: Lower},
			Column{Key: "lost_requests", Title: "lost req", Better: Lower})
	}
	// Overload (--max-conns under the connections) and resets (--reset):
	// what was refused and reset, and what the server held after.
	robust := slices.ContainsFunc(r.Points, func(p netresult.Point) bool {
		return slices.ContainsFunc(p.Runs, func(r netresult.Run) bool { return r.ServerFDsBefore > 0 })
	})
	// Heartbeats (--heartbeat): what a held connection costs.
	held := slices.ContainsFunc(r.Points, func(p netresult.Point) bool {
		return slices.ContainsFunc(p.Runs, func(r netresult.Run) bool { return r.ServerRSSHeld > 0 })
	})
	if held {
		d.Columns = append(d.Columns,
			Column{Key: "server_cpu_pct", Title: "CPU %", Unit: "%", Better: Lower, Prec: 1},
			Column{Key: "server_rss_per_conn_kb", Title: "RSS/conn KB", Unit: "KiB", Better: Lower, Prec: 2},
			Column{Key: "tcp_mem_per_conn_kb", Title: "TCP KB/conn", Unit: "KiB", Better: Lower, Prec: 2})
	}
	if robust {
		d.Columns = append(d.Columns,
			Column{Key: "refused_conns", Title: "refused"},
			Column{Key: "resets", Title: "resets"},
			Column{Key: "leaked_fds", Title: "fds Δ", Better: Lower},
			Column{Key: "server_rss_delta_mb", Title: "RSS Δ MB", Unit: "MB", Better: Lower, Prec: 1})
	}
	if lossy {
		d.Columns = append(d.Columns,
			Column{Key: "retrans_per_1k_req", Title: "retrans/1k", Unit: "1/1k", Better: Lower, Prec: 1},
			Column{Key: "dial_retries", Title: "dial retries", Better: Lower, Wide: true})
	}
	// Where the server's CPU went (--perf): the kinds some point has.
	kinds := netPerfKinds(r)
	for _, k := range kinds {
		d.Columns = append(d.Columns, Column{Key: "perf_" + k.String() + "_pct", Title: netPerfTitle(k), Unit: "%", Prec: 1})
	}
	d.Columns = append(d.Columns,
		Column{Key: "client_cpu_us_per_req", Title: "client µs/req", Unit: "µs", Better: Lower, Prec: 2, Wide: true},
		Column{Key: "mb_per_s", Title: "MB/s", Unit: "MB/s", Better: Higher, Prec: 1, Wide: true},
		Column{Key: "conns", Title: "conns", Wide: true},
		Column{Key: "size_bytes", Title: "bytes", Unit: "B", Wide: true},
		Column{Key: "mode", Title: "mode", Wide: true},
		Column{Key: "runs", Title: "runs", Wide: true},
		Column{Key: "corrupted_bytes", Title: "corrupted", Unit: "B", Wide: true},
		Column{Key: "lost_bytes", Title: "lost", Unit: "B", Wide: true},
		Column{Key: "conn_errors", Title: "conn errors", Wide: true},
		Column{Key: "integrity", Title: "integrity"},
	)
	spread := false // some row has more than one run
	for _, g := range groups {
		grp := Group{Title: keyOf(g[0]).label()}
		for _, p := range g {
			if p.Err != "" {
				why := "error: " + oneLine(p.Err)
				if p.Err == netresult.NotRun {
					why = p.Err // an interruption is not the engine's error
				}
				grp.Rows = append(grp.Rows, Row{Cells: []Cell{TextCell(p.Engine)}, Err: why})
				continue
			}
			spread = spread || len(p.Runs) > 1
			cells := []Cell{
				TextCell(p.Engine),
				netRuns(p, func(r *netresult.Run) float64 { return r.QPS }, false),
				netRuns(p, func(r *netresult.Run) float64 { return float64(r.P50Ns) / 1e3 }, true),
				netRuns(p, func(r *netresult.Run) float64 { return float64(r.P99Ns) / 1e3 }, true),
				netRuns(p, func(r *netresult.Run) float64 { return float64(r.P999Ns) / 1e3 }, true),
				netRuns(p, func(r *netresult.Run) float64 { return float64(r.MaxNs) / 1e3 }, true),
				netRuns(p, func(r *netresult.Run) float64 { return r.ServerCPUPerReqUs }, true),
			}
			// Server CPU per request over the reference's at the same
			// point: blank for the reference itself or where it has no row.
			for _, ref := range refs {
				c := TextCell("")
				if i := slices.IndexFunc(g, func(q *netresult.Point) bool { return q.Engine == ref }); i >= 0 && p.Engine != ref {
					c = netVsCell(p, g[i])
				}
				cells = append(cells, c)
			}
			if vsNoLoss {
				qps, p99 := TextCell(""), TextCell("") // blank at 0% itself, or without a 0% row
				if base := noLoss(r, p); base != nil && p.Loss > 0 {
					qps, p99 = ratioCell(p.QPS, base.QPS), ratioCell(float64(p.P99Ns), float64(base.P99Ns))
				}
				cells = append(cells, qps, p99)
			}
			if recovery {
				// The point's median, in which a run that did not
				// recover counts as the longest.
				rec := Figure(float64(p.RecoveryNs) / 1e6)
				if !p.Recovered {
					rec = TextCell(fmt.Sprintf("> %v", time.Duration(recoveryAfterOf(p)).Round(time.Second)))
				}
				cells = append(cells,
					netRuns(p, func(r *netresult.Run) float64 { return r.QPSBefore }, false),
					netRuns(p, func(r *netresult.Run) float64 { return r.QPSDuring }, false),
					rec)
			}
			if held {
				perConn := func(f func(r *netresult.Run) int64) Cell {
					return netRuns(p, func(r *netresult.Run) float64 {
						if r.ServerRSSHeld == 0 {
							return math.NaN()
						}
						return float64(f(r)) / float64(p.Conns) / 1024
					}, false)
				}
				cells = append(cells,
					netRuns(p, func(r *netresult.Run) float64 {
						if r.ElapsedNs <= 0 {
							return math.NaN()
						}
						return 100 * float64(r.ServerCPUNs) / float64(r.ElapsedNs)
					}, false),
					perConn(func(r *netresult.Run) int64 { return r.ServerRSSHeld - r.ServerRSSIdle }),
					perConn(func(r *netresult.Run) int64 { return r.TCPMemHeld - r.TCPMemIdle }))
			}
			if robust {
				// The runs' sums, and the median growth of the server's
				// resident memory over a run (10^6 bytes).
				rss := netRuns(p, func(r *netresult.Run) float64 {
					if r.ServerFDsBefore == 0 {
						return math.NaN()
					}
					return float64(r.ServerRSSAfter-r.ServerRSSBefore) / 1e6
				}, false)
				cells = append(cells, Figure(float64(p.Refused)), Figure(float64(p.Resets)), Figure(float64(p.LeakedFDs)), rss)
			}
			if reconnects || restarts {
				var rc, rs int64
				for _, r := range p.Runs {
					rc, rs = rc+r.Reconnects, rs+r.Resent
				}
				cells = append(cells, Figure(float64(rc)), Figure(float64(rs)))
			}
			if restarts {
				cells = append(cells, Figure(float64(p.ConnErrors)), Figure(float64((p.Lost+int64(p.Size)-1)/int64(max(1, p.Size)))))
			}
			if lossy {
				cells = append(cells, netRuns(p, func(r *netresult.Run) float64 {
					if r.Requests == 0 {
						return 0
					}
					return float64(r.Retransmits) * 1000 / float64(r.Requests)
				}, false), netRuns(p, func(r *netresult.Run) float64 { return float64(r.DialRetries) }, false))
			}
			for _, k := range kinds {
				c := Runs(nil) // "–": this point was not recorded
				if p.Perf != nil && p.Perf.Samples > 0 {
					c = Figure(100 * p.Perf.Share(k))
				}
				cells = append(cells, c)
			}
			integrity := "ok"
			if p.Corrupted != 0 || p.LeakedFDs != 0 || !p.Restart && (p.Lost != 0 || p.ConnErrors != 0) {
				integrity = "BAD"
			}
			cells = append(cells,
				netRuns(p, func(r *netresult.Run) float64 { return r.ClientCPUPerReqUs }, true),
				netRuns(p, func(r *netresult.Run) float64 { return r.MBps }, false),
				Figure(float64(p.Conns)), Figure(float64(p.Size)), TextCell(p.Mode), Figure(float64(len(p.Runs))),
				Figure(float64(p.Corrupted)), Figure(float64(p.Lost)), Figure(float64(p.ConnErrors)),
				TextCell(integrity))
			grp.Rows = append(grp.Rows, Row{Cells: cells})
		}
		d.Groups = append(d.Groups, grp)
	}
	d.Legend = []Field{
		{"QPS", "requests echoed whole and verified per second"},
		{"P99 µs", "latency from a request's send to the last byte of its echo (–: not measured, as in stream mode)"},
		{"CPU µs/req", "CPU time (user + system, every thread) of the server process per request, from the kernel's process CPU clock"},
	}
	if len(refs) > 0 {
		d.Legend = append(d.Legend, Field{"vs " + refs[0], "CPU µs/req divided by " + refs[0] + "'s in the same run (a point's engines run in turn, run by run), the median over the runs: below 1.00 costs less CPU"})
	}
	if vsNoLoss {
		d.Legend = append(d.Legend,
			Field{"QPS vs 0%", "QPS over the same engine's at the same point with no packet dropped (--loss 0): below 1.00 is slower"},
			Field{"P99 vs 0%", "P99 over the same engine's with no packet dropped: above 1.0 is slower"})
	}
	if held {
		d.Legend = append(d.Legend,
			Field{"CPU %", "the server's CPU time per second of the window, every thread (100% is one core)"},
			Field{"RSS/conn KB", "the server's resident memory while the connections were held, beyond what it was before they were dialled, per connection (KiB)"},
			Field{"TCP KB/conn", "the kernel's TCP socket-buffer memory (sockstat's mem) while held, beyond before, per connection: both ends of a loopback connection (KiB)"})
	}
	if robust {
		d.Legend = append(d.Legend,
			Field{"refused", "connections the server refused, over its --max-conns (closed before any echo), summed over the runs"},
			Field{"resets", "connections that reset themselves mid-request (--reset: SO_LINGER 0), summed over the runs"},
			Field{"fds Δ", "descriptors the server held once a run's connections had closed (within 2 s) beyond what it held before the run, summed: above 0 is a leak"},
			Field{"RSS Δ MB", "growth of the server's resident memory over a run, median"})
	}
	if recovery {
		d.Legend = append(d.Legend,
			Field{"QPS before", "QPS in the seconds before the loss window (--recovery) or the server's restart (--restart)"},
			Field{"QPS during", "QPS while the packets were dropped, or while the server was down"},
			Field{"recovery ms", "from the end of the loss (or the new server's listening) to the start of the first 500 ms whose QPS is back to 90% of QPS before; > N: not within the N the run waited"})
	}
	if restarts {
		d.Legend = append(d.Legend,
			Field{"failed", "connections that failed in the runs and did not reconnect (--restart: the restart's cost, not an integrity failure)"},
			Field{"lost req", "requests never echoed, summed over the runs (--restart: lost with their connections)"})
	}
	if reconnects || restarts {
		d.Legend = append(d.Legend,
			Field{"reconnects", "the load generator's reconnects after failed connections (--reconnect), summed over the runs"},
			Field{"resent", "messages sent again on a new connection because the old one failed before their echo came whole, each verified"})
	}
	if lossy {
		d.Legend = append(d.Legend, Field{"retrans/1k", "TCP segments retransmitted per 1,000 requests, both directions, in the point's network namespace with that share of its loopback's packets dropped (--loss; the run's dial and warm-up included)"})
		d.Legend = append(d.Legend, Field{"dial retries", "connection attempts of the dial ramp that failed (timed out as SYNs were lost, or refused) and were tried again"})
	}
	if len(kinds) > 0 {
		d.Legend = append(d.Legend, Field{netPerfTitle(kinds[0]) + " … " + netPerfTitle(kinds[len(kinds)-1]),
			"where the server process's CPU went in the measured windows, every run together: shares of perf's samples (--perf)"})
	}
	for _, k := range kinds {
		d.Legend = append(d.Legend, Field{netPerfTitle(k), netPerfLegend[k]})
	}
	if spread {
		d.Legend = append(d.Legend, Field{"(min–max)", "over the runs; the figures are medians"})
	}
	d.Legend = append(d.Legend,
		Field{"integrity", "ok: every echoed byte matched what was sent, none was lost, no connection failed and no descriptor leaked, in every run"})
	return d
}

// recoveryAfterOf is how long p's runs waited for QPS after the loss:
// the end of the timeline after the loss ended.
func recoveryAfterOf(p *netresult.Point) int64 {
	var after int64
	for _, r := range p.Runs {
		after = max(after, int64(len(r.Timeline))*r.TimelineNs-r.DisruptOffNs)
	}
	return after
}

// noLoss is the point of r that is p's engine, connections, size and
// mode with no packet dropped (a --loss 0 level), measured; nil if none.
func noLoss(r *netresult.Report, p *netresult.Point) *netresult.Point {
	for i := range r.Points {
		q := &r.Points[i]
		if q.LossSet && q.Loss == 0 && q.Err == "" && q.Engine == p.Engine && q.Conns == p.Conns && q.Size == p.Size && q.Mode == p.Mode {
			return q
		}
	}
	return nil
}

// netPerfKinds lists the kinds of CPU (perf.Kinds, in their order) that
// have a share above 0 at some point of r: none without --perf.
func netPerfKinds(r *netresult.Report) []perf.Kind {
	var out []perf.Kind
	for _, k := range perf.Kinds() {
		if slices.ContainsFunc(r.Points, func(p netresult.Point) bool {
			return p.Err == "" && p.Perf != nil && p.Perf.Share(k) > 0
		}) {
			out = append(out, k)
		}
	}
	return out
}

// netPerfTitle is the header of a kind's share column: "net%".
func netPerfTitle(k perf.Kind) string {
	switch k {
	case perf.Runtime:
		return "runtime%"
	case perf.IOUring:
		return "uring%"
	}
	return k.String() + "%"
}

// netPerfLegend says what each kind's column holds.
var netPerfLegend = map[perf.Kind]string{
	perf.User:    "user code: the server's own code and the copies it makes itself",
	perf.Runtime: "the Go runtime: scheduler, GC, allocation, entering and leaving syscalls",
	perf.Syscall: "syscall entry and exit: the kernel's entry code and the user-space stubs",
	perf.Copy:    "the kernel's copies to and from user memory",
	perf.Fault:   "page faults",
	perf.IOUring: "io_uring's own machinery: submission, completion, task work, io-wq",
	perf.Poll:    "readiness polling: epoll_wait and the readiness checks it makes, and the wakeups a send delivers to a peer's epoll",
	perf.Net:     "the network stack: sockets, TCP/IP, loopback, softirq receive",
	perf.Kernel:  "the rest of the kernel: scheduler (a wait's context switch), locks, VFS, memory",
}

// netRuns is a figure over p's runs. positive says that 0 means "not
// measured" (a latency in stream mode, a CPU time not read): such runs
// are left out, and a figure none of the runs has is "–".
func netRuns(p *netresult.Point, f func(*netresult.Run) float64, positive bool) Cell {
	var vals []float64
	for i := range p.Runs {
		x := f(&p.Runs[i])
		if !finite(x) || positive && x <= 0 {
			continue
		}
		vals = append(vals, x)
	}
	return Runs(vals)
}

// splitField splits a header field's value at "; " into a line each, so
// that a long value stays within a terminal's width. An empty value
// gives no field.
func splitField(f Field) []Field {
	var out []Field
	for _, part := range strings.Split(f.Value, "; ") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		if len(out) > 0 {
			f.Key = ""
		}
		out = append(out, Field{f.Key, part})
	}
	return out
}

// netVersion is the Go and iopath versions of a report.
func netVersion(r *netresult.Report) string {
	var ver []string
	if r.Machine.GoVersion != "" {
		ver = append(ver, r.Machine.GoVersion)
	}
	iv := r.Version
	if iv == "" {
		iv = r.Machine.IopathVersion
	}
	if iv != "" {
		ver = append(ver, "iopath "+iv)
	}
	return strings.Join(ver, ", ")
}

// WriteNet writes r in one of KindFormats: JSON is the report itself
// (NetJSON), the others its Doc (NetDoc).
func WriteNet(w io.Writer, format string, r *netresult.Report, o DocOptions) error {
	if format == "json" {
		return NetJSON(w, r)
	}
	if !slices.Contains(KindFormats, format) {
		return fmt.Errorf("unknown format %q for a net report: valid formats are %s", format, strings.Join(KindFormats, ", "))
	}
	return WriteDoc(w, format, NetDoc(r), o)
}
