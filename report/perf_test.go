package report

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/perf"
)

// Function names a made-up call tree draws from, by layer: Go code down
// to the syscall, then the kernel, each with its kind.
var (
	fakeGo = []string{
		"runtime.goexit.abi0", "runtime.main", "main.main", "main.mainCode",
		"github.com/iopath/iopath/bench.ChildMain", "github.com/iopath/iopath/bench.measure",
		"github.com/iopath/iopath/bench.measurePasses", "github.com/iopath/iopath/bench.measure.func2",
		"github.com/iopath/iopath/engine.readFile", "github.com/iopath/iopath/engine.runWorkers",
		"github.com/iopath/iopath/engine.runWorkers.func1", "github.com/iopath/iopath/engine.readFile.func2",
		"github.com/iopath/iopath/engine.(*preadRun).Run.func1", "github.com/iopath/iopath/engine.preadFull",
		"github.com/iopath/iopath/internal/fileio.(*Nowait).Preadv", "github.com/iopath/iopath/internal/fileio.(*Nowait).Try",
		"github.com/iopath/iopath/internal/sys.PreadvNowait", "github.com/iopath/iopath/bench.(*consumer).Consume",
		"github.com/zeebo/xxh3.accumAVX512", "github.com/HdrHistogram/hdrhistogram-go.(*Histogram).RecordValue",
		"github.com/iopath/iopath/metrics.(*Ticks).Now", "slices.SortFunc[go.shape.[]*uint8,go.shape.*uint8]",
	}
	fakeRuntime = []string{"runtime.mallocgc", "runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.scanobject",
		"runtime.schedule", "runtime.findRunnable", "runtime.entersyscall", "runtime.exitsyscall", "runtime.memclrNoHeapPointers"}
	fakeSyscall = []string{"syscall.RawSyscall6.abi0", "internal/runtime/syscall/linux.Syscall6", "entry_SYSCALL_64_after_hwframe", "do_syscall_64"}
	fakeKernel  = []string{"__x64_sys_preadv2", "do_preadv", "vfs_readv", "do_iter_readv_writev", "ext4_file_read_iter",
		"generic_file_read_iter", "filemap_read", "filemap_get_pages", "filemap_get_read_batch", "touch_atime",
		"page_cache_sync_ra", "page_cache_ra_order", "read_pages", "ext4_mpage_readpages", "submit_bio_noacct",
		"blk_mq_submit_bio", "__rcu_read_unlock", "_raw_spin_lock_irqsave", "folio_mark_accessed", "xas_load"}
	fakeCopy    = []string{"copy_page_to_iter", "_copy_to_iter", "rep_movs_alternative"}
	fakeFault   = []string{"asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault", "__handle_mm_fault", "do_fault", "filemap_fault"}
	fakeIOUring = []string{"__do_sys_io_uring_enter", "io_submit_sqes", "io_issue_sqe", "io_read", "__io_read", "io_cqring_wait", "tctx_task_work"}
)

// fakeFlame is a made-up call tree, deterministic for seed, shaped like a
// recorded one pruned to 0.5%: a spine of Go frames down through a
// syscall into the kernel, and side calls off it (hashing, the runtime,
// other kernel paths), each a chain that may branch again; up to nodes
// functions, depth levels deep.
func fakeFlame(seed uint64, samples int64, nodes, depth int, uring bool) *perf.Flame {
	rng := rand.New(rand.NewPCG(seed, 0x1f2e3d))
	limit := samples / 200 // Prune's 0.5%
	goLevels := depth / 2  // the Go frames, then the syscall's, then the kernel's
	count := 1
	kindAt := func(d int) ([]string, perf.Kind) {
		switch {
		case d < goLevels-4:
			if rng.IntN(6) == 0 {
				return fakeRuntime, perf.Runtime
			}
			return fakeGo, perf.User
		case d < goLevels:
			return fakeSyscall, perf.Syscall
		}
		switch r := rng.IntN(20); {
		case uring && r < 5:
			return fakeIOUring, perf.IOUring
		case r < 9:
			return fakeCopy, perf.Copy
		case r < 11:
			return fakeFault, perf.Fault
		}
		return fakeKernel, perf.Kernel
	}
	add := func(n *perf.Flame, d int, v int64) *perf.Flame {
		names, kind := kindAt(d)
		name := names[rng.IntN(len(names))]
		for slices.ContainsFunc(n.Children, func(o *perf.Flame) bool { return o.Name == name }) {
			name += "'"
		}
		c := &perf.Flame{Name: name, Kind: kind.String(), Value: v}
		n.Children = append(n.Children, c)
		count++
		return c
	}
	// chain grows a call chain from n down to level end, with side calls
	// off it, each to a level of its own.
	var chain func(n *perf.Flame, d, end int)
	chain = func(n *perf.Flame, d, end int) {
		for ; d < end; d++ {
			left := n.Value - n.Value*int64(rng.IntN(6))/100 // self time
			for rng.IntN(100) < 60 && count < nodes {
				v := left * int64(3+rng.IntN(12)) / 100
				if v < limit || left-v < limit {
					break
				}
				left -= v
				chain(add(n, d, v), d+1, min(d+4+rng.IntN(20), depth))
			}
			if left < limit {
				break
			}
			n = add(n, d, left)
		}
	}
	root := &perf.Flame{Name: "all", Value: samples}
	chain(root, 0, depth)
	var sortAll func(n *perf.Flame)
	sortAll = func(n *perf.Flame) {
		slices.SortFunc(n.Children, func(a, b *perf.Flame) int { return strings.Compare(a.Name, b.Name) })
		for _, c := range n.Children {
			sortAll(c)
		}
	}
	sortAll(root)
	return root
}

// flameDepth is the number of levels of f.
func flameDepth(f *perf.Flame) int {
	d := 0
	for _, c := range f.Children {
		d = max(d, flameDepth(c))
	}
	return d + 1
}

// perfSample is a benchmark of 5 engines in 2 cache states recorded with
// --perf, 3 runs each, with fio twins (which perf does not record) when
// fio: every iopath row has its breakdown, each run's, a call tree of
// some 300–600 functions about 30 levels deep (one deeper than the 40
// levels drawn) and the Go runtime's figures; no row spent CPU in the
// network stack.
func perfSample(fio bool) *bench.Report {
	// Two block sizes, so that sweepSample's failing row is in the one
	// dropped.
	r := sweepSample([]int{128 << 10, 4096}, []int{32}, []string{"read", "pread", "readv", "mmap", "io_uring"}, fio)
	var rows []bench.Result
	for _, res := range r.Results {
		if res.BS == 128<<10 {
			rows = append(rows, res)
		}
	}
	r.Results, r.Sweep.BlockSizes = rows, []int{128 << 10}
	r.Command = "iopath bench /var/tmp/data --engines read,pread,readv,mmap,io_uring --cache warm,cold --perf /tmp/perf"
	r.Notes = append(r.Notes, "recorded (--perf): perf 6.1, cpu-clock sampling with call graphs (frame pointers), kernel frames included; the profiles are in /tmp/perf")
	for i := range r.Results {
		res := &r.Results[i]
		if res.Tool == bench.ToolFio {
			continue
		}
		uring, mmap, cold := res.Engine == "io_uring", res.Engine == "mmap", res.Cache == "cold"
		share := func(run int) *perf.Breakdown {
			j := 0.01 * float64(run-1) // the runs differ a little
			b := perf.Breakdown{Samples: 1200 + int64(run)*10, User: 0.18 + j, GoRuntime: 0.03, Syscall: 0.02, Copy: 0.65 - j, Fault: 0.02, Kernel: 0.10}
			switch {
			case mmap:
				b.User, b.Copy, b.Fault = 0.80+j, 0, 0.07-j
			case uring:
				b.Copy, b.IOUring = 0.55-j, 0.10
			}
			if cold {
				b.Fault, b.Kernel = b.Fault+0.05, b.Kernel+0.05
				if mmap {
					b.User -= 0.1
				} else {
					b.Copy -= 0.1
				}
			}
			b.CPUNs = b.Samples * 250_000
			return &b
		}
		for k := range res.Runs {
			res.Runs[k].Perf = share(k)
			res.Runs[k].PerfProfile = fmt.Sprintf("/tmp/perf/%s-%s-run%d.pb.gz", res.Engine, res.Cache, k+1)
			res.Runs[k].Runtime = &metrics.Runtime{ThreadsMax: 7 + k%2, ThreadsStarted: 1, GoThreadsMax: 7, GoroutinesMax: 12 + k,
				SchedWaitNs: int64(120_000 * (k + 1)), SchedWaitP99Ns: 65_536, GCCycles: int64(6 + k), GCCPUNs: 4_000_000}
		}
		merged := *share(1)
		merged.Samples *= 3
		res.Perf = &merged
		res.Runtime = &metrics.Runtime{ThreadsMax: 8, ThreadsStarted: 1, GoThreadsMax: 7, GoroutinesMax: 13,
			SchedWaitNs: 240_000, SchedWaitP99Ns: 65_536, GCCycles: 7, GCCPUNs: 4_000_000}
		depth := 28 + i%5
		if res.Engine == "read" && cold {
			depth = 46 // deeper than drawn
		}
		res.Flame = fakeFlame(uint64(i+1), merged.Samples, 300+(i*53)%300, depth, uring)
	}
	return r
}

// The fixture is what it says: some 300–600 functions per tree, about 30
// levels, one deeper than drawn.
func TestPerfSampleShape(t *testing.T) {
	deep := 0
	for _, res := range perfSample(false).Results {
		n, d := res.Flame.Count(), flameDepth(res.Flame)
		t.Logf("%s %s: %d nodes, %d levels", res.Engine, res.Cache, n, d)
		if n < 250 || n > 650 || d < 20 {
			t.Errorf("%s %s: %d nodes, %d levels: not the shape wanted", res.Engine, res.Cache, n, d)
		}
		if d > flameMaxDepth {
			deep++
		}
	}
	if deep == 0 {
		t.Error("no tree deeper than the levels drawn")
	}
}

// With --perf, the table shows where the CPU went, a column per kind
// some row spent CPU in (not the network stack here), without --wide;
// the Go runtime's figures are --wide's. Every such cell carries each
// run's figure; fio's rows, which perf does not record, have none.
func TestBenchDocPerf(t *testing.T) {
	r := perfSample(true)
	d := BenchDoc(r)
	col := func(key string) int { return slices.IndexFunc(d.Columns, func(c Column) bool { return c.Key == key }) }
	for _, k := range []perf.Kind{perf.User, perf.Runtime, perf.Syscall, perf.Copy, perf.Fault, perf.IOUring, perf.Kernel} {
		i := col(perfKey(k))
		if i < 0 {
			t.Errorf("no %s column", perfKey(k))
			continue
		}
		if c := d.Columns[i]; c.Wide || c.Hidden || c.Title != perfTitles[k] {
			t.Errorf("%s: %+v", c.Key, c)
		}
	}
	if col("perf_net_pct") >= 0 {
		t.Error("a net column, though no row spent CPU there")
	}
	for _, key := range []string{"threads_max", "threads_started", "goroutines_max", "sched_wait_ns", "gc_cycles"} {
		if i := col(key); i < 0 || !d.Columns[i].Wide {
			t.Errorf("%s: not a --wide column", key)
		}
	}
	copyCol, waitCol := col("perf_copy_pct"), col("sched_wait_ns")
	for _, g := range d.Groups {
		for _, row := range g.Rows {
			c, w := row.Cells[copyCol], row.Cells[waitCol]
			if strings.HasPrefix(row.Cells[0].Text, "fio ") {
				if finite(c.Value) || finite(w.Value) {
					t.Errorf("%s: perf or runtime figures for fio: %v %v", row.Cells[0].Text, c, w)
				}
				continue
			}
			if len(c.Runs) != 3 || len(w.Runs) != 3 {
				t.Errorf("%s: copy runs %v, sched wait runs %v: want 3 each", row.Cells[0].Text, c.Runs, w.Runs)
			}
		}
	}

	var table, wide, gob bytes.Buffer
	for _, x := range []struct {
		b      *bytes.Buffer
		format string
		wide   bool
	}{{&table, "table", false}, {&wide, "table", true}, {&gob, "gobench", false}} {
		if err := WriteDoc(x.b, x.format, d, DocOptions{Wide: x.wide}); err != nil {
			t.Fatal(err)
		}
	}
	head := regexp.MustCompile(`(?m)^engine .*$`)
	if h := head.FindString(table.String()); !strings.Contains(h, "  copy  ") || strings.Contains(h, "threads") {
		t.Errorf("table header: %s", h)
	}
	if h := head.FindString(wide.String()); !strings.Contains(h, "  thr+  ") || !strings.Contains(h, "sched wait") || !strings.Contains(h, "  GC") {
		t.Errorf("wide table header: %s", h)
	}
	for _, want := range []string{"user…kernel: where the CPU went (--perf)", "copy: the kernel's copy routines", "uring: io_uring's own machinery",
		"thr+ (threads started during the run)"} {
		if !strings.Contains(strings.Join(strings.Fields(table.String()), " "), want) {
			t.Errorf("the legend lacks %q", want)
		}
	}
	for _, want := range []string{" perf-copy-pct", " sched-wait-ns", " threads-max", "Unit sched-wait-ns better=lower"} {
		if !strings.Contains(gob.String(), want) {
			t.Errorf("gobench lacks %q", want)
		}
	}

	// Without --perf, no breakdown; without the runtime's figures (a
	// report of an older iopath), none of theirs.
	for _, doc := range []*Doc{BenchDoc(smallSweep()), BenchDoc(treeSample())} {
		for _, c := range doc.Columns {
			if strings.HasPrefix(c.Key, perfKeyPrefix) || c.Key == "threads_max" {
				t.Errorf("%s: a %s column without --perf", doc.Kind, c.Key)
			}
		}
	}
}

// A tree recorded with --perf has the same columns.
func TestTreeDocPerf(t *testing.T) {
	r := treeSample()
	ps := perfSample(false)
	for i := range r.Results {
		if r.Results[i].Error != "" {
			continue
		}
		src := ps.Results[i%len(ps.Results)]
		r.Results[i].Perf, r.Results[i].Runtime, r.Results[i].Flame = src.Perf, src.Runtime, src.Flame
		for k := range r.Results[i].Runs {
			r.Results[i].Runs[k].Perf, r.Results[i].Runs[k].Runtime = src.Runs[k%len(src.Runs)].Perf, src.Runs[k%len(src.Runs)].Runtime
		}
	}
	d := BenchDoc(r)
	var keys []string
	for _, c := range d.Columns {
		keys = append(keys, c.Key)
	}
	for _, want := range []string{"perf_copy_pct", "perf_kernel_pct", "gc_cycles"} {
		if !slices.Contains(keys, want) {
			t.Errorf("tree columns %v lack %s", keys, want)
		}
	}
	if keys[len(keys)-1] != "checksum" {
		t.Errorf("tree columns %v: checksum is not last", keys)
	}
	doc := renderHTML(t, r)
	checkOffline(t, doc)
	want := map[string]int{"files-per-s": 5, "cpu-per-1k-files": 5, "cpu-breakdown": 7}
	for _, res := range r.Results {
		if res.Flame != nil {
			want[hSlug("flame "+engineRowName(res)+" "+res.Cache)] = flameKinds(res.Flame)
		}
	}
	checkCharts(t, doc, want)
}

// engineRowName is a tree row's name in its Doc.
func engineRowName(res bench.Result) string {
	name := res.Engine
	if res.Workers > 1 {
		name += fmt.Sprintf(" ×%d", res.Workers)
	}
	if res.QD > 0 {
		name += fmt.Sprintf(" qd%d", res.QD)
	}
	return name
}

// flameKinds counts the kinds of the functions a flame graph draws: its
// series.
func flameKinds(f *perf.Flame) int {
	seen := map[string]bool{}
	var walk func(n *perf.Flame, d int)
	walk = func(n *perf.Flame, d int) {
		if d >= flameMaxDepth {
			return
		}
		if d > 0 {
			seen[n.Kind] = true
		}
		for _, c := range n.Children {
			walk(c, d+1)
		}
	}
	walk(f, 0)
	return len(seen)
}

// perfCharts are perfSample's charts: the bench page's, the breakdown (a
// series per kind but net) and a flame graph per iopath row.
func perfCharts(r *bench.Report, fio bool) map[string]int {
	n := 5
	if fio {
		n = 10
	}
	want := map[string]int{"cpu-breakdown": 7}
	for _, c := range []string{"warm", "cold"} {
		want["throughput-"+c], want["cpu-"+c], want["latency-"+c] = n, n, n
	}
	for _, res := range r.Results {
		if res.Flame != nil {
			want[hSlug("flame "+res.Engine+" "+res.Cache)] = flameKinds(res.Flame)
		}
	}
	return want
}

// The page of a run with --perf: the breakdown, a bar per iopath row
// grouped by cache state, and a flame graph per row, two by two, each
// box with its tooltip.
func TestHTMLPerf(t *testing.T) {
	r := perfSample(true)
	doc := renderHTML(t, r)
	checkOffline(t, doc)
	checkCharts(t, doc, perfCharts(r, true))
	for _, want := range []string{`<section id="breakdown">`, `<h2>Where the CPU goes</h2>`, `<section id="flame">`,
		`<h3>pread warm (3,630 samples)</h3>`, `>warm cache</text>`, `>cold cache</text>`,
		`<title>github.com/iopath/iopath/bench.ChildMain`, "Calls deeper than 40 levels are not drawn."} {
		if !strings.Contains(doc, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Each kind has its colour in the breakdown and every flame graph.
	colour := map[string]string{}
	for _, k := range perf.Kinds() {
		colour[k.Label()] = perfColors[k]
	}
	for _, c := range charts(t, doc) {
		if c.id != "cpu-breakdown" && !strings.HasPrefix(c.id, "flame-") {
			continue
		}
		for i, name := range c.series {
			if want, ok := colour[name]; !ok || !strings.Contains(c.colours[i], want) {
				t.Errorf("chart %s: series %q not in its colour %s (%s)", c.id, name, want, strings.TrimSpace(c.colours[i])[:min(60, len(strings.TrimSpace(c.colours[i])))])
			}
		}
	}
	// The flame graphs are in a grid, two side by side.
	i := strings.Index(doc, `<section id="flame">`)
	if j := strings.Index(doc[i:], "</section>"); !strings.Contains(doc[i:i+j], `<div class="grid">`) {
		t.Error("the flame graphs are not in a grid")
	}
	// A bar per iopath row in the breakdown (a segment per kind it has).
	bd := svgRe.FindString(doc[strings.Index(doc, `data-chart="cpu-breakdown"`)-40:])
	// user, runtime, syscall, copy, fault and kernel; mmap without copy,
	// io_uring with its own: 2 × (3×6 + 5 + 7).
	if n := strings.Count(bd, `<g class="seg">`); n != 60 {
		t.Errorf("%d segments in the breakdown, want 60", n)
	}
	if strings.Contains(bd, "fio ") {
		t.Error("a fio row in the breakdown")
	}
	for _, name := range []string{"read", "pread", "readv", "mmap", "io_uring"} {
		if n := len(regexp.MustCompile(`<text x="32" y="[0-9.]+">`+name+`</text>`).FindAllString(bd, -1)); n != 2 {
			t.Errorf("%s: not a bar per cache state", name)
		}
	}
}

// The HTML of 5 engines in 2 cache states with --perf, a flame graph of
// some 300–600 functions per row, stays under 2 MB.
func TestHTMLPerfSize(t *testing.T) {
	r := perfSample(false)
	doc := renderHTML(t, r)
	nodes := 0
	for _, res := range r.Results {
		nodes += res.Flame.Count()
	}
	t.Logf("5 engines × 2 caches with --perf: %d bytes, %d functions in %d flame graphs", len(doc), nodes, len(r.Results))
	if len(doc) >= 2<<20 {
		t.Errorf("the page is %d bytes, over 2 MB", len(doc))
	}
}

// A flame graph: the root across the whole width, each callee under its
// caller and within its extent, as wide as its samples, coloured by its
// kind (a series per kind); a name cut to fit or left out; a tooltip with
// the full name, samples and share; no more than flameMaxDepth levels.
func TestFlameChart(t *testing.T) {
	long := "github.com/iopath/iopath/internal/fileio.(*Nowait).Preadv"
	f := &perf.Flame{Name: "all", Value: 1000, Children: []*perf.Flame{
		{Name: long, Kind: "user", Value: 600, Children: []*perf.Flame{
			{Name: "copy_page_to_iter", Kind: "copy", Value: 400},
			{Name: "tiny", Kind: "kernel", Value: 5},
		}},
		{Name: "runtime.mallocgc", Kind: "go_runtime", Value: 300},
	}}
	// A chain deeper than drawn under the runtime.
	n := f.Children[1]
	for i := range 60 {
		c := &perf.Flame{Name: fmt.Sprintf("deep%d", i), Kind: "kernel", Value: 300}
		n.Children, n = []*perf.Flame{c}, c
	}
	svg, deeper := flameChart("flame-x", "x (1,000 samples)", f)
	if !deeper {
		t.Error("the 62-level tree is not said to be deeper than drawn")
	}
	checkCharts(t, svg, map[string]int{"flame-x": 4}) // user, runtime, copy, kernel
	if strings.Contains(svg, ">deep38<") || !strings.Contains(svg, ">deep37<") {
		t.Errorf("not %d levels drawn", flameMaxDepth)
	}
	box := regexp.MustCompile(`<g><title>([^<]*)</title><rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="[0-9.]+"/>(?:<text [^>]*>([^<]*)</text>)?</g>`)
	boxes := map[string][]string{}
	for _, m := range box.FindAllStringSubmatch(svg, -1) {
		boxes[strings.SplitN(m[1], "\n", 2)[0]] = m[1:]
	}
	num := func(s string) float64 {
		var v float64
		fmt.Sscan(s, &v)
		return v
	}
	root, pre, cp, tiny := boxes["all"], boxes[long], boxes["copy_page_to_iter"], boxes["tiny"]
	if root == nil || pre == nil || cp == nil || tiny == nil {
		t.Fatalf("boxes missing: %v", boxes)
	}
	if w := num(root[3]); math.Abs(w-(chartHalfW-5)) > 1 {
		t.Errorf("root %v wide, want the chart's width", w)
	}
	if r := num(pre[3]) / num(root[3]); math.Abs(r-0.6) > 0.01 {
		t.Errorf("%s is %.3f of the root, want 0.6", long, r)
	}
	if num(cp[2]) <= num(pre[2]) || num(cp[1]) < num(pre[1]) || num(cp[1])+num(cp[3]) > num(pre[1])+num(pre[3]) {
		t.Errorf("copy_page_to_iter %v is not under its caller %v", cp[1:4], pre[1:4])
	}
	if !strings.Contains(pre[0], "600 samples, 60% of all") {
		t.Errorf("tooltip %q", pre[0])
	}
	if pre[4] != "fileio.(*Nowait).Preadv" {
		t.Errorf("label %q, want the short name", pre[4])
	}
	if tiny[4] != "" {
		t.Errorf("a 2-pixel box is labelled %q", tiny[4])
	}
	// A name is text, wherever it lands.
	evil := &perf.Flame{Name: "all", Value: 10, Children: []*perf.Flame{{Name: `<script>alert(1)</script>`, Kind: "user", Value: 10}}}
	esc, _ := flameChart("flame-evil", `<b onmouseover=alert(2)>x</b>`, evil)
	checkEscaped(t, esc)
	checkCharts(t, esc, map[string]int{"flame-evil": 1})
	if s := flameLabel(long, 60); !strings.HasSuffix(s, "…") || hTextWidth(s, 11) > 60 {
		t.Errorf("label cut to %q", s)
	}
	if s := shortFunc("slices.SortFunc[go.shape.[]*uint8,go.shape.*uint8]"); s != "slices.SortFunc[go.shape.[]*uint8,go.shape.*uint8]" {
		t.Errorf("short name %q", s)
	}
	if s := shortFunc("github.com/a/b.(*T[go.shape.x/y]).M"); s != "b.(*T[go.shape.x/y]).M" {
		t.Errorf("short name %q", s)
	}
}
