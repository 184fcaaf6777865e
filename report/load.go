package report

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
)

// Load is one `net load` run and what it ran against.
type Load struct {
	Result *netresult.Load
	// Addr is the server's address; ServerPID the process whose CPU was
	// read (0: none).
	Addr      string
	ServerPID int
}

// LoadDoc maps a load run into a Doc: the server and the load in the
// header with the integrity verdict, then one row of figures.
func LoadDoc(l Load) *Doc {
	r := l.Result
	loop := "closed loop"
	if r.OpenLoop {
		loop = fmt.Sprintf("open loop at %.0f/s (latency from the intended send time)", r.Rate)
	}
	d := &Doc{Kind: "net-load"}
	d.Header = []Field{
		{"server", l.Addr},
		{"load", fmt.Sprintf("%d connections × %s, %s, %s, %v measured (dial ramp %v), %s client",
			r.Conns, units.FormatSize(int64(r.Size)), r.Mode, loop, r.Elapsed.Round(time.Millisecond), r.DialTime.Round(time.Millisecond), r.Client)},
		{"integrity", loadIntegrity(r)},
	}
	us := func(ns int64) Cell {
		if r.LatencyNs.Max <= 0 {
			return Figure(math.NaN()) // stream mode measures no latency
		}
		return Figure(float64(ns) / 1e3)
	}
	serverCPU := l.ServerPID > 0 && r.ServerCPUSource != ""
	server := Figure(math.NaN())
	if serverCPU {
		server = Figure(r.ServerCPUPerReqUs)
	}
	d.Columns = []Column{
		{Key: "requests", Title: "requests"},
		{Key: "qps", Title: "QPS", Better: Higher},
		{Key: "mb_per_s", Title: "MB/s", Unit: "MB/s", Better: Higher, Prec: 1},
		{Key: "p50_us", Title: "P50 µs", Unit: "µs", Better: Lower, Prec: 1},
		{Key: "p90_us", Title: "P90 µs", Unit: "µs", Better: Lower, Prec: 1, Wide: true},
		{Key: "p99_us", Title: "P99 µs", Unit: "µs", Better: Lower, Prec: 1},
		{Key: "p999_us", Title: "P99.9 µs", Unit: "µs", Better: Lower, Prec: 1},
		{Key: "max_us", Title: "max µs", Unit: "µs", Better: Lower, Prec: 1},
		{Key: "client_cpu_us_per_req", Title: "client µs/req", Unit: "µs", Better: Lower, Prec: 2},
		{Key: "server_cpu_us_per_req", Title: "server µs/req", Unit: "µs", Better: Lower, Prec: 2},
		{Key: "carried_conns", Title: "carried", Wide: true},
	}
	d.Groups = []Group{{Rows: []Row{{Cells: []Cell{
		Figure(float64(r.Requests)), Figure(r.QPS), Figure(r.MBps),
		us(r.LatencyNs.P50), us(r.LatencyNs.P90), us(r.LatencyNs.P99), us(r.LatencyNs.P999), us(r.LatencyNs.Max),
		Figure(r.ClientCPUPerReqUs), server, Figure(float64(r.Carried)),
	}}}}}
	d.Legend = []Field{
		{"µs/req", "CPU time (user + system, every thread) per request"},
		{"carried", "connections that had bytes echoed within the window"},
	}
	d.Notes = append(d.Notes, fmt.Sprintf("client CPU %v over the window", r.ClientCPU.Round(time.Millisecond)))
	if serverCPU {
		src := "the kernel's process CPU clock"
		if r.ServerCPUSource == "proc" {
			src = "/proc/PID/stat, 10 ms ticks"
		}
		d.Notes = append(d.Notes, fmt.Sprintf("server CPU %v over the window, pid %d, every thread, from %s", r.ServerCPU.Round(time.Millisecond), l.ServerPID, src))
	} else {
		d.Notes = append(d.Notes, "server CPU not measured: give the server's pid with --server-pid")
	}
	if r.Refused > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d connections refused by the server (closed or reset before any echo: over its connection limit); the figures are the other connections'", r.Refused))
	}
	if r.Resets > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d connections reset themselves mid-request (SO_LINGER 0), as asked; what they were owed is not counted lost", r.Resets))
	}
	if r.Reconnects > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d reconnects after failed connections; %d messages sent again on the new connections, and their echoes verified", r.Reconnects, r.Resent))
	}
	if r.DialRetries > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d connection attempts failed and were tried again in the dial ramp", r.DialRetries))
	}
	if r.OpenLoop && r.Unfinished > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d messages due in the window had not come back by its end; they are in the latencies with the time they had waited", r.Unfinished))
	}
	return d
}

func loadIntegrity(r *netresult.Load) string {
	if r.Corrupted == 0 && r.Lost == 0 && r.ConnErrors == 0 {
		return "every byte verified: 0 corrupted, 0 lost, 0 failed connections"
	}
	s := fmt.Sprintf("FAILED: %d corrupted bytes, %d lost bytes, %d failed connections", r.Corrupted, r.Lost, r.ConnErrors)
	if r.NoEcho > 0 {
		s += fmt.Sprintf(", %d of them with no echo within the first %v (left unserved)", r.NoEcho, r.NoEchoWait.Round(10*time.Millisecond))
	}
	if r.FirstError != "" && r.ConnErrors > r.NoEcho {
		s += " (first: " + r.FirstError + ")"
	}
	return s
}

// WriteLoad writes a load run in one of KindFormats.
func WriteLoad(w io.Writer, format string, l Load, o DocOptions) error {
	if format == "json" {
		return jsondoc.Write(w, netresult.LoadKind, netresult.LoadSchemaVersion, l.Result)
	}
	return WriteDoc(w, format, LoadDoc(l), o)
}
