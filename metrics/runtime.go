package metrics

import (
	"bufio"
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// Runtime is what the Go runtime did around a measured phase: the threads
// and goroutines it used, how long runnable goroutines waited for a
// thread, and its garbage collector's share.
type Runtime struct {
	// ThreadsMax is the most OS threads the process had (/proc/self/status),
	// io_uring's kernel workers (iou-wrk) included; ThreadsStarted is that
	// less the threads it had when the phase began.
	ThreadsMax     int `json:"threads_max"`
	ThreadsStarted int `json:"threads_started"`
	// GoThreadsMax is the most threads the Go runtime owned
	// (/sched/threads/total:threads).
	GoThreadsMax  int `json:"go_threads_max"`
	GoroutinesMax int `json:"goroutines_max"`
	// SchedWaitNs is the time goroutines spent runnable, waiting for a
	// thread to run on, summed over every wait (/sched/latencies:seconds,
	// each bucket counted at its midpoint); SchedWaitP99Ns the 99th
	// percentile of one wait.
	SchedWaitNs    int64 `json:"sched_wait_ns"`
	SchedWaitP99Ns int64 `json:"sched_wait_p99_ns"`
	GCCycles       int64 `json:"gc_cycles"`
	// GCCPUNs is the CPU the collector used (/cpu/classes/gc/total), an
	// estimate the runtime updates at each cycle.
	GCCPUNs int64 `json:"gc_cpu_ns"`
}

// runtimeInterval is how often a RuntimeSampler looks at the thread and
// goroutine counts: often enough to see a pool's threads, seldom enough
// to cost nothing measurable (one read of /proc/self/status, ~10 µs, per
// interval).
const runtimeInterval = 10 * time.Millisecond

var runtimeNames = []string{
	"/sched/threads/total:threads",
	"/sched/goroutines:goroutines",
	"/sched/latencies:seconds",
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/total:cpu-seconds",
}

// RuntimeSampler watches the runtime from StartRuntime to Stop.
type RuntimeSampler struct {
	samples  []metrics.Sample
	start    []metrics.Sample
	threads0 int
	mu       sync.Mutex
	r        Runtime
	stop     chan struct{}
	done     chan struct{}
}

// StartRuntime takes the runtime's figures now and samples the thread
// and goroutine counts until Stop.
func StartRuntime() *RuntimeSampler {
	s := &RuntimeSampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.start = readRuntime()
	s.samples = readRuntime()
	s.threads0 = osThreads()
	s.observe(s.start, s.threads0)
	go s.loop()
	return s
}

func readRuntime() []metrics.Sample {
	ss := make([]metrics.Sample, len(runtimeNames))
	for i, n := range runtimeNames {
		ss[i].Name = n
	}
	metrics.Read(ss)
	return ss
}

func (s *RuntimeSampler) loop() {
	defer close(s.done)
	t := time.NewTicker(runtimeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			metrics.Read(s.samples)
			s.observe(s.samples, osThreads())
		}
	}
}

func (s *RuntimeSampler) observe(ss []metrics.Sample, threads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.ThreadsMax = max(s.r.ThreadsMax, threads)
	if ss[0].Value.Kind() == metrics.KindUint64 {
		s.r.GoThreadsMax = max(s.r.GoThreadsMax, int(ss[0].Value.Uint64()))
	}
	if ss[1].Value.Kind() == metrics.KindUint64 {
		s.r.GoroutinesMax = max(s.r.GoroutinesMax, int(ss[1].Value.Uint64()))
	}
}

// Stop ends the sampling and returns the figures of the whole phase.
func (s *RuntimeSampler) Stop() Runtime {
	close(s.stop)
	<-s.done
	end := readRuntime()
	s.observe(end, osThreads())
	r := s.r
	r.ThreadsStarted = max(r.ThreadsMax-s.threads0, 0)
	if a, b := s.start[2].Value, end[2].Value; a.Kind() == metrics.KindFloat64Histogram && b.Kind() == metrics.KindFloat64Histogram {
		r.SchedWaitNs, r.SchedWaitP99Ns = histDelta(a.Float64Histogram(), b.Float64Histogram())
	}
	if a, b := s.start[3].Value, end[3].Value; a.Kind() == metrics.KindUint64 && b.Kind() == metrics.KindUint64 {
		r.GCCycles = int64(b.Uint64() - a.Uint64())
	}
	if a, b := s.start[4].Value, end[4].Value; a.Kind() == metrics.KindFloat64 && b.Kind() == metrics.KindFloat64 {
		r.GCCPUNs = int64((b.Float64() - a.Float64()) * 1e9)
	}
	return r
}

// histDelta is the sum (each bucket at its midpoint, the open-ended ones
// at their finite edge) and the 99th percentile, in ns, of the
// observations b holds beyond a.
func histDelta(a, b *metrics.Float64Histogram) (sumNs, p99Ns int64) {
	if len(a.Counts) != len(b.Counts) {
		return 0, 0
	}
	var total uint64
	var sum float64
	mid := func(i int) float64 {
		lo, hi := b.Buckets[i], b.Buckets[i+1]
		switch {
		case lo < -1e300:
			return hi
		case hi > 1e300:
			return lo
		}
		return (lo + hi) / 2
	}
	for i := range b.Counts {
		n := b.Counts[i] - a.Counts[i]
		total += n
		sum += float64(n) * mid(i)
	}
	if total == 0 {
		return 0, 0
	}
	want := (total*99 + 99) / 100
	var seen uint64
	for i := range b.Counts {
		seen += b.Counts[i] - a.Counts[i]
		if seen >= want {
			p99Ns = int64(b.Buckets[i+1] * 1e9)
			if b.Buckets[i+1] > 1e300 {
				p99Ns = int64(b.Buckets[i] * 1e9)
			}
			break
		}
	}
	return int64(sum * 1e9), p99Ns
}

// osThreads is the process's thread count from /proc/self/status, 0 when
// it cannot be read.
func osThreads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("Threads:")); ok {
			n, _ := strconv.Atoi(string(bytes.TrimSpace(v)))
			return n
		}
	}
	return 0
}
