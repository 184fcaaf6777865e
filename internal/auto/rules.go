package auto

import (
	"fmt"

	"github.com/iopath/iopath/internal/defaults"
	"github.com/iopath/iopath/internal/profile"
)

// Every rule Auto applies is in the table below, tried in order; the
// first whose condition holds and whose engine can run here decides. Each
// cites the measurement behind it: docs/auto.md has the commands and the
// full figures (2-vCPU VM, Linux 6.18, ext4 on virtio, 2026-11-22; ratios
// are medians of interleaved runs). A rule that needs io_uring is always
// followed by one with the same condition that does not, so a process
// without io_uring falls through to it, and its Reason names why.

// Thresholds and worker counts the rules use.
const (
	// SmallFile: below it one worker reading in order is as fast as
	// anything, and parallel workers and mmap cost more than they save
	// (goroutines, the mapping's setup, and its page faults, which are
	// dear in a VM). On the AMD EPYC VM (2026-11-26, BenchmarkScanSizes
	// and BenchmarkReadFileSizes, warm, interleaved): Scan of 1 MiB with
	// mmap ×2 was 0.12× an os.File.Read loop and pread ×1 0.82×, of 4 MiB
	// 0.73× and 1.03×; ReadFile with mmap ×2 was 0.27× os.ReadFile at 1
	// MiB and 0.52× at 1.5 MiB. (On the Intel VM of 2026-11-22 mmap ×1
	// led pread ×1 from 1 MiB, 16.3 against 12.2 GiB/s: not here.)
	SmallFile = 8 << 20

	// cachedAt: data counts as cached from this resident fraction up. It
	// is where the warm choice's loss on the uncached part equals its gain
	// on the cached part: 0.95 for big files (mmap ×2: 19.7 GiB/s warm,
	// 0.92 cold; pread ×2: 13.9 warm, 1.41 cold) and 0.91–0.97 for many
	// small files (raw ×2: 474k files/s warm, 21k cold; io_uring ×2:
	// 171k–312k warm, 85k–106k cold).
	cachedAt = 0.95
	// midWholeMax: below it (and from SmallFile) ReadFile of a cached
	// file is one read(2) (mid-cached-whole).
	midWholeMax = 32 << 20
	// midColdMax: below it (and from SmallFile) a Scan of an uncached
	// file reads with one worker (mid-uncached-blocks).
	midColdMax = 64 << 20
	// mappedAt: positioned reads copy from a mapping of the file from
	// this resident fraction up. A mapping wins on cached pages (64 random
	// 4 KiB, warm: see positioned-cached-mmap) and loses 5–10× on the
	// others ([R1] cold), so it takes a file almost wholly cached.
	mappedAt = 0.99
	// maxCPUWorkers caps workers that copy from the page cache (one per
	// core helps until memory bandwidth is full; 2 cores here: not
	// measured above 2, where 2 workers gave 1.8× one).
	maxCPUWorkers = 8
	// ioWorkers are goroutines that mostly wait for the device: their
	// number is set by the device's queue, not by the cores. raw ×8 read
	// cold files at 25k files/s, ×32 at 26k, ×2 at 19k; pread ×2 with
	// O_DIRECT 0.98 GiB/s against ×8 0.84–0.89.
	ioWorkers = 8
	// maxRings caps io_uring rings for cold many files (each is a thread
	// and 64 registered 64 KiB buffers): ×2 read 85k–106k files/s, ×4 90k,
	// ×1 66k–72k.
	maxRings = 4
	// uringQD is io_uring's reads in flight per ring for one file: the
	// engine's default.
	uringQD = defaults.QueueDepth
	// manyDepth is batch io_uring's files in flight per ring: the
	// engine's default.
	manyDepth = defaults.ManyDepth
	// poolWorkers is the pool engine's goroutines, used when
	// IOPATH_ENGINE=pool: the engine's default.
	poolWorkers = defaults.PoolWorkers
	// directBlock is the block size of pread with O_DIRECT: larger reads
	// keep the device busier between calls (pread ×2 1 MiB: 0.98 GiB/s;
	// 128 KiB ×8: 0.84).
	directBlock = 1 << 20
)

// rule is one row of the table.
type rule struct {
	id      string
	kinds   []Kind
	when    func(w Workload) bool
	engine  string
	workers func(env Env) int
	qd, bs  int
	// why is the Reason: what the rule does and the measurement behind it.
	why string
}

var (
	oneFile  = []Kind{WholeFile, Blocks}
	manyKind = []Kind{ManyFiles}
	posKind  = []Kind{Positioned}
)

func always(Workload) bool { return true }

// cold: measured, and below cachedAt. Unknown residency (-1) counts as
// cached: Decide could not look (the file is missing or unreadable, and
// the engine will say so), or the caller did not measure.
func cold(w Workload) bool { return w.Resident >= 0 && w.Resident < cachedAt }

func direct(w Workload) bool { return w.Direct }

// midWhole: cached (or not measured), and under midWholeMax.
func midWhole(w Workload) bool { return !cold(w) && w.Size < midWholeMax }

// midCold: not cached, and under midColdMax.
func midCold(w Workload) bool { return cold(w) && w.Size < midColdMax }

// mapped: measured, not O_DIRECT, and at least mappedAt in the page cache.
func mapped(w Workload) bool { return !w.Direct && w.Resident >= mappedAt }

func small(w Workload) bool { return w.Size < SmallFile }

func one(Env) int { return 1 }

func fixedWorkers(n int) func(Env) int { return func(Env) int { return n } }

func cpuWorkers(env Env) int { return min(env.GOMAXPROCS, maxCPUWorkers) }

func upTo(n int) func(Env) int { return func(env Env) int { return min(env.GOMAXPROCS, n) } }

// rules is every rule, in the order they are tried.
var rules = []rule{
	// Many files, each whole (ReadFiles).
	{id: "many-uncached", kinds: manyKind, when: cold, engine: "io_uring", workers: upTo(maxRings), qd: manyDepth,
		why: "files not in the page cache: io_uring chains keep 64 files in flight per ring " +
			"(100k × 4 KiB cold: io_uring ×2 106k files/s, 5.0× pool ×128, 5.0× raw ×2; 256 × 4 MiB: 1.17× raw ×2)"},
	{id: "many-uncached-no-uring", kinds: manyKind, when: cold, engine: "raw", workers: fixedWorkers(ioWorkers),
		why: "files not in the page cache without io_uring: 8 raw workers wait on the device in parallel " +
			"(10k × 4 KiB cold: raw ×8 25k files/s, 1.3× pool ×128 and raw ×2)"},
	{id: "many-cached", kinds: manyKind, when: always, engine: "raw", workers: cpuWorkers,
		why: "cached files: raw openat/read/close, 3 syscalls a file, one worker per core " +
			"(100k × 4 KiB warm: raw ×2 481k files/s, 1.5× io_uring ×2, 3.5× readfile; 256 × 4 MiB: 2.0× io_uring ×2)"},

	// One file, all of it (ReadFile) or every block once (Scan).
	{id: "direct", kinds: oneFile, when: direct, engine: "io_uring", workers: one, qd: uringQD,
		why: "O_DIRECT: io_uring keeps 32 device reads in flight " +
			"(1 GiB seq: 1.09 GiB/s, 1.7× pread, 1.1× the best pread ×2 of 1 MiB, at 0.6× its CPU)"},
	{id: "direct-no-uring", kinds: oneFile, when: direct, engine: "pread", workers: fixedWorkers(2), bs: directBlock,
		why: "O_DIRECT without io_uring: 2 pread workers of 1 MiB blocks keep the device busy " +
			"(0.98 GiB/s, 1.5× one worker of 128 KiB)"},
	{id: "small-file", kinds: oneFile, when: small, engine: "pread", workers: one,
		why: "a file under 8 MiB: one worker of pread; more workers or a mapping cost more than they save " +
			"(warm, AMD EPYC VM: Scan of 1 MiB pread ×1 7× mmap ×2, of 4 MiB 1.4×; ReadFile of 1 MiB, one read 2.6× mmap ×2)"},
	{id: "mid-uncached-blocks", kinds: []Kind{Blocks}, when: midCold, engine: "pread", workers: one,
		why: "Scan of a file of 8 to 64 MiB not in the page cache: one pread worker, as the kernel's readahead serves one stream best " +
			"(AMD EPYC VM, dropped before every call, 15 interleaved calls: 8 MiB pread ×1 2.6 ms, os.File.Read loop 2.7, pread ×2 2.9–3.0; " +
			"16 MiB ×1 5.7, ×2 7.5; BenchmarkVsStd: Scan with ×2 was 0.81× the loop at 8 MiB, 1.04–1.07× from 64 MiB)"},
	{id: "big-uncached", kinds: oneFile, when: cold, engine: "pread", workers: upTo(2),
		why: "a big file not in the page cache: pread with the kernel's readahead, 2 workers " +
			"(1 GiB cold, 8 interleaved sets: 1.24–1.66 GiB/s, the best or 0.84–0.93× the best in all but one noisy set; " +
			"buffered io_uring, the best in 3 sets, fell to 0.36–0.94 in others)"},
	{id: "mid-cached-whole", kinds: []Kind{WholeFile}, when: midWhole, engine: "read", workers: one,
		why: "ReadFile of a cached file of 8 to 32 MiB: one read(2) of the whole file, as os.ReadFile does; " +
			"two workers' start cost more than they saved between other work " +
			"(AMD EPYC VM, BenchmarkVsStd, warm, calls interleaved: pread ×2 0.76–0.98× os.ReadFile at 8 MiB, 0.72–0.99× at 16 MiB, " +
			"1.06× at 64 MiB; cold it is 1.3–2.4× at 8–16 MiB: rule big-uncached)"},
	{id: "big-cached", kinds: oneFile, when: always, engine: "pread", workers: cpuWorkers,
		why: "a cached file of 8 MiB or more: pread, one worker per core, straight into place; " +
			"a fresh mapping's page faults cost more than its copy saves in a VM " +
			"(AMD EPYC VM, warm: wc -l of 1 GiB in a new process, pread ×2 0.14 s, mmap ×2 0.55 s; " +
			"Scan of 16 MiB pread ×2 1.74× an os.File.Read loop, mmap ×2 1.34×; ReadFile of 16 MiB pread ×2 1.48× os.ReadFile, mmap ×2 0.44×; " +
			"mmap led by 1.4–1.6× at 1 GiB on the Intel VM, and by 1.2× at 64 MiB here when one process mapped the file again and again)"},

	// Positioned reads (File.ReadAt, ReadBatch), typically random 4 KiB.
	{id: "positioned-direct", kinds: posKind, when: direct, engine: "io_uring", workers: cpuWorkers, qd: uringQD,
		why: "O_DIRECT positioned reads: io_uring keeps 32 in flight per ring " +
			"(256 MiB random 4 KiB O_DIRECT: io_uring ×2 0.36 GiB/s, 3× pread ×8, 9× pread ×1)"},
	{id: "positioned-direct-no-uring", kinds: posKind, when: direct, engine: "pread", workers: fixedWorkers(ioWorkers),
		why: "O_DIRECT positioned reads without io_uring: 8 pread workers wait on the device in parallel " +
			"(256 MiB random 4 KiB O_DIRECT: pread ×8 0.12 GiB/s, 1.5× ×2, 3× ×1)"},
	{id: "positioned-cached-mmap", kinds: posKind, when: mapped, engine: "mmap", workers: cpuWorkers,
		why: "positioned reads of a file at least 99% cached: iopath.File copies from one mapping of the file, " +
			"on the caller's goroutine (one worker per core for batches of 1 MiB or more) " +
			"(BenchmarkReadBatch, 64 random 4 KiB of a cached 64 MiB file: 7.0 µs a batch, " +
			"3.3× the io_uring backend, 3.2× 64 os.File.ReadAt; 256 MiB random 4 KiB warm [R1]: mmap ×2 1.4–2.3× io_uring ×2; " +
			"not for less: mmap is 5–10× slower on uncached pages)"},
	{id: "positioned", kinds: posKind, when: always, engine: "io_uring", workers: cpuWorkers, qd: uringQD,
		why: "positioned reads: io_uring keeps 32 in flight per ring, one system call per round " +
			"(256 MiB random 4 KiB cold: 0.44 GiB/s, 1.9× pread ×8, 6× mmap; warm: 5.86 GiB/s, 1.1× mmap ×2, 1.2× pread ×2 " +
			"in one session, while in others mmap led by 1.4–2.3× once the page cache held large folios: " +
			"mmap is chosen only for files at least 99% cached (positioned-cached-mmap), as it is 5–10× slower on uncached pages)"},
	{id: "positioned-uncached-no-uring", kinds: posKind, when: cold, engine: "pread", workers: fixedWorkers(ioWorkers),
		why: "uncached positioned reads without io_uring: 8 pread workers wait on the device in parallel " +
			"(256 MiB random 4 KiB cold: pread ×8 0.23 GiB/s, 1.5× ×2, 2.6× mmap)"},
	{id: "positioned-cached-no-uring", kinds: posKind, when: always, engine: "pread", workers: cpuWorkers,
		why: "mostly cached positioned reads without io_uring: pread, one worker per core " +
			"(256 MiB random 4 KiB warm: pread ×2 4.96 GiB/s, 0.97× mmap ×2, which mapped the file once per worker)"},
}

// RuleIDs lists the ids of the rules in the order they are tried.
func RuleIDs() []string {
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = r.id
	}
	return ids
}

func (r *rule) applies(w Workload) bool {
	for _, k := range r.kinds {
		if k == w.Kind {
			return r.when(w)
		}
	}
	return false
}

// profileKind is the machine profile's name for kind, or "" for a kind
// it has no rules for.
func profileKind(k Kind) string {
	switch k {
	case WholeFile:
		return profile.WholeFile
	case Blocks:
		return profile.Blocks
	}
	return ""
}

// profileRule is the machine profile's rule for w, when one covers its
// kind, filesystem and size, w is not O_DIRECT and the rule's engine can
// run here; skipped says why a rule that covers w did not decide. The
// profile was measured on cached files: a file of SmallFile or more must
// be cached (or its residency unknown), as the table's big-cached rule
// needs, since a path that wins on cached pages can lose 5–10× on the
// device's. A smaller file takes the rule whatever its residency, as the
// table's small-file rule does, so that Auto does not measure it.
func profileRule(w Workload, env Env) (c Choice, skipped string, ok bool) {
	name := profileKind(w.Kind)
	if env.Profile == nil || name == "" || w.Direct || (!small(w) && cold(w)) {
		return c, "", false
	}
	r, s, found := env.Profile.Lookup(name, w.FS, w.Size)
	if !found {
		return c, "", false
	}
	if why := unavailable(w, env, r.Engine); why != "" {
		return c, fmt.Sprintf("the machine profile's rule would use %s but %s; ", r.Engine, why), false
	}
	where := "machine profile"
	if p := env.Profile.Path(); p != "" {
		where += " " + p
	}
	if !s.Tuned.IsZero() {
		where += ", tuned " + s.Tuned.Format("2006-01-02")
	}
	return Choice{
		Engine: r.Engine, Workers: r.WorkersFor(env.GOMAXPROCS), Rule: RuleProfile,
		Reason: fmt.Sprintf("%s on %s: %s", where, w.FS, r.Why),
	}, "", true
}

// applyRules returns the choice of the machine profile's rule for w, if
// one applies, or else of the first rule of the table that applies to w
// and whose engine can run in env, with the rules skipped on the way in
// its Reason.
func applyRules(w Workload, env Env) Choice {
	c, skipped, ok := profileRule(w, env)
	if ok {
		return c
	}
	for i := range rules {
		r := &rules[i]
		if !r.applies(w) {
			continue
		}
		if why := unavailable(w, env, r.engine); why != "" {
			skipped += fmt.Sprintf("rule %s would use %s but %s; ", r.id, r.engine, why)
			continue
		}
		return Choice{
			Engine: r.engine, Workers: max(1, r.workers(env)), QueueDepth: r.qd, BlockSize: r.bs,
			Rule: r.id, Reason: skipped + r.why,
		}
	}
	// Each Kind's last rule applies always and needs nothing: reached only
	// for a Kind out of range.
	return Choice{Engine: "pread", Workers: 1, Rule: "unknown-kind", Reason: fmt.Sprintf("%v is not a known access kind: one pread worker", w.Kind)}
}

// defaultsFor returns workers, queue depth and block size for an engine
// the user forced that differs from the rules' choice c: what the rules
// give that engine elsewhere.
func defaultsFor(w Workload, env Env, name string, c Choice) (workers, qd, bs int) {
	if w.Kind == ManyFiles {
		switch name {
		case "readfile":
			return 1, 0, 0
		case "pool":
			return poolWorkers, 0, 0
		case "io_uring":
			return min(env.GOMAXPROCS, maxRings), manyDepth, 0
		}
		return cpuWorkers(env), 0, 0
	}
	if name == "io_uring" {
		qd = uringQD
	}
	return max(1, c.Workers), qd, c.BlockSize
}
