package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/netio/netresult"
)

// netLossSample is epoll and io_uring at 1000 conns × 64B × pingpong with
// no loss and with 10% of packets dropped (net bench --loss 0,10%).
func netLossSample() *netresult.Report {
	const ms = 1_000_000
	r := netSample()
	r.Config.Engines, r.Config.Sizes, r.Config.Loss, r.Config.RTOMaxMs = []string{"epoll", "io_uring"}, []int{64}, []float64{0, 0.1}, 1000
	r.Skipped, r.Points = nil, nil
	for _, c := range []struct {
		engine   string
		loss     float64
		qps      float64
		p99      int64
		retrans  int64
		retries  int64
		serverUs float64
	}{
		{"epoll", 0, 140_000, 10 * ms, 0, 0, 6.9},
		{"io_uring", 0, 146_000, 8 * ms, 0, 0, 6.3},
		{"epoll", 0.1, 17_500, 590 * ms, 20_000, 3, 9.4},
		{"io_uring", 0.1, 14_600, 660 * ms, 17_000, 0, 10.0},
	} {
		run := netRun(c.qps, c.serverUs, 10, 64, c.p99/2, c.p99, c.p99*2, c.p99*3)
		run.Retransmits, run.DialRetries = c.retrans, c.retries
		p := netPoint(c.engine, 1000, 64, "pingpong", run)
		p.Loss, p.LossSet = c.loss, true
		p.Summarize()
		r.Points = append(r.Points, p)
	}
	return r
}

// Under --loss each level is a group of its own, and the table gains the
// figures relative to the same engine with no loss and the namespace's
// retransmissions per 1,000 requests.
func TestNetDocLoss(t *testing.T) {
	r := netLossSample()
	d := NetDoc(r)
	const no, ten = "1000 conns × 64B × pingpong × 0% loss", "1000 conns × 64B × pingpong × 10% loss"
	var titles []string
	for _, g := range d.Groups {
		titles = append(titles, g.Title)
	}
	if !slices.Equal(titles, []string{no, ten}) {
		t.Fatalf("groups %q", titles)
	}
	for _, c := range []struct {
		group, engine, key string
		want               float64 // NaN: blank
	}{
		{ten, "epoll", "qps_vs_no_loss", 17_500.0 / 140_000},
		{ten, "io_uring", "qps_vs_no_loss", 14_600.0 / 146_000},
		{ten, "io_uring", "p99_vs_no_loss", 660.0 / 8},
		{ten, "epoll", "retrans_per_1k_req", 20_000 * 1000 / (17_500.0 * 2)},
		{ten, "epoll", "dial_retries", 3},
		{no, "epoll", "retrans_per_1k_req", 0},
		{no, "epoll", "qps_vs_no_loss", math.NaN()},
	} {
		cell, _ := docCell(t, d, c.group, c.engine, c.key)
		if math.IsNaN(c.want) {
			if cell.Num || cell.Text != "" {
				t.Errorf("%s %s %s: %+v, want blank", c.group, c.engine, c.key, cell)
			}
			continue
		}
		if math.Abs(cell.Value-c.want) > 1e-9*math.Max(1, c.want) {
			t.Errorf("%s %s %s = %v, want %v", c.group, c.engine, c.key, cell.Value, c.want)
		}
	}
	var b bytes.Buffer
	if err := WriteNet(&b, "table", r, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"QPS vs 0%", "P99 vs 0%", "retrans/1k", "× 10% loss"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if width(line) > docWrap && !strings.HasPrefix(line, "command") {
			t.Errorf("line wider than %d columns: %q", docWrap, line)
		}
	}
	// Without a 0% level there is nothing to be relative to.
	r.Points = slices.DeleteFunc(r.Points, func(p netresult.Point) bool { return p.Loss == 0 })
	if slices.ContainsFunc(NetDoc(r).Columns, func(c Column) bool { return c.Key == "qps_vs_no_loss" }) {
		t.Error("a QPS vs 0% column with no 0% level")
	}
	// Without --loss, none of it.
	if cols := NetDoc(netSample()).Columns; slices.ContainsFunc(cols, func(c Column) bool { return strings.Contains(c.Key, "retrans") }) {
		t.Error("a retransmission column without --loss")
	}
}

// The JSON keeps what --loss adds.
func TestNetJSONLoss(t *testing.T) {
	var b bytes.Buffer
	if err := WriteNet(&b, "json", netLossSample(), DocOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`"loss": 0.1`, `"loss_set": true`, `"retransmits": 20000`, `"rto_max_ms": 1000`, `"dial_retries": 3`} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
}

// Overload and resets: the table gains what was refused and reset and
// what the server held after, and a leaked descriptor fails the point and
// the verdict.
func TestNetDocOverload(t *testing.T) {
	r := netSample()
	r.Skipped = nil
	r.Points = slices.DeleteFunc(r.Points, func(p netresult.Point) bool { return p.Size != 64 })
	for i := range r.Points {
		p := &r.Points[i]
		for j := range p.Runs {
			run := &p.Runs[j]
			run.Refused, run.Resets = 500, 40
			run.ServerFDsBefore, run.ServerFDsAfter = 12, 12
			run.ServerRSSBefore, run.ServerRSSAfter = 20e6, 21e6
			if p.Engine == "net" && j == 0 {
				run.ServerFDsAfter = 15
			}
		}
		p.Summarize()
	}
	d := NetDoc(r)
	const g = "1000 conns × 64B × pingpong"
	for _, c := range []struct {
		engine, key string
		want        float64
	}{
		{"epoll", "refused_conns", 1000}, {"epoll", "resets", 80}, {"epoll", "leaked_fds", 0},
		{"net", "leaked_fds", 3}, {"io_uring", "server_rss_delta_mb", 1},
	} {
		if cell, _ := docCell(t, d, g, c.engine, c.key); cell.Value != c.want {
			t.Errorf("%s %s = %v, want %v", c.engine, c.key, cell.Value, c.want)
		}
	}
	if cell, _ := docCell(t, d, g, "net", "integrity"); cell.Text != "BAD" {
		t.Errorf("net's integrity with 3 descriptors leaked: %q", cell.Text)
	}
	if cell, _ := docCell(t, d, g, "epoll", "integrity"); cell.Text != "ok" {
		t.Errorf("epoll's integrity: %q", cell.Text)
	}
	if !strings.Contains(strings.Join(d.Notes, "\n"), "3 DESCRIPTORS LEAKED by the servers") {
		t.Errorf("notes: %q", d.Notes)
	}
	// Without either, no such column.
	if slices.ContainsFunc(NetDoc(netSample()).Columns, func(c Column) bool { return c.Key == "refused_conns" }) {
		t.Error("a refused column without --max-conns or --reset")
	}
}

// A restart's failed connections and lost requests are its columns, not
// integrity failures; a corrupted byte still is one.
func TestNetDocRestart(t *testing.T) {
	r := netSample()
	r.Skipped, r.Config.Restart, r.Config.Reconnect = nil, true, "none"
	r.Points = slices.DeleteFunc(r.Points, func(p netresult.Point) bool { return p.Size != 64 })
	for i := range r.Points {
		p := &r.Points[i]
		p.Restart = true
		for j := range p.Runs {
			run := &p.Runs[j]
			run.ConnErrors, run.Lost = 1000, 64000
			run.QPSBefore, run.QPSDuring = 150_000, 0
			run.Timeline, run.TimelineNs, run.DisruptOnNs, run.DisruptOffNs = make([]int64, 130), 1e8, 3e9, 3.1e9
			if p.Engine == "epoll" {
				run.ConnErrors, run.Lost, run.Reconnects, run.Resent = 0, 0, 1000, 1000
				run.Recovered, run.RecoveryNs = true, 50e6
			}
		}
		p.Summarize()
	}
	d := NetDoc(r)
	const g = "1000 conns × 64B × pingpong × server restarted"
	for _, c := range []struct {
		engine, key string
		want        float64
	}{
		{"net", "failed_conns", 2000}, {"net", "lost_requests", 2000}, {"epoll", "reconnects", 2000}, {"epoll", "recovery_ms", 50},
	} {
		if cell, _ := docCell(t, d, g, c.engine, c.key); cell.Value != c.want {
			t.Errorf("%s %s = %v, want %v", c.engine, c.key, cell.Value, c.want)
		}
	}
	if cell, _ := docCell(t, d, g, "net", "recovery_ms"); cell.Text != "> 10s" {
		t.Errorf("net's recovery: %+v, want > 10s", cell)
	}
	if cell, _ := docCell(t, d, g, "net", "integrity"); cell.Text != "ok" {
		t.Errorf("net's integrity with its connections lost to the restart: %q", cell.Text)
	}
	if _, clean := netVerdict([][]*netresult.Point{{&r.Points[0], &r.Points[1]}}); !clean {
		t.Error("a restart's failed connections made the verdict unclean")
	}
	r.Points[0].Corrupted = 1
	if _, clean := netVerdict([][]*netresult.Point{{&r.Points[0]}}); clean {
		t.Error("a corrupted byte in a restart run left the verdict clean")
	}
}
