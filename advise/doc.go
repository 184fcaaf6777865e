// Package advise looks at a user's own files, measures the candidate I/O
// paths on a sample of them within a time budget, and recommends one, with
// the figures behind it and the Go code that uses it through package
// iopath. It is the library behind "iopath advise".
//
// Run does four things, in order:
//
//  1. Inspect lists the paths (a directory is walked with package batch's
//     semantics: symlinks to files are followed, symlinks to directories
//     found by the walk and special files are skipped and counted) and
//     summarises the files: count, total bytes, median, p90 and largest
//     size. A tree too large to list within a quarter of the budget is
//     summarised from what was listed, and the count is a lower bound.
//  2. It measures how much of the data is in the page cache now, with
//     mincore (one file: internal/auto.Residency, what Auto looks at; many
//     files: the pages of up to 1,000 of the sampled files): from 50% on
//     the data counts as cached (warm). That is the state the
//     recommendation is for. mincore hides the state of files the user
//     may not write (it reports them cached, since Linux 5.0); advise then
//     says it cannot see it and advises for cached data.
//  3. A trial: many files (a tree, or several files) are read through each
//     batch engine (readfile — os.ReadFile, the baseline — pool, raw with
//     one worker and with GOMAXPROCS, io_uring with one ring and with
//     GOMAXPROCS) from a sample of up to 20,000 of them, given as a list
//     (the walk is not measured); one file through each engine (read —
//     the baseline — pread with one worker and with GOMAXPROCS, mmap,
//     io_uring), over at most 1 GiB of it (each of W workers reads the
//     start of its own region). What internal/auto would pick is added
//     when it is not among these. Each is measured warm (the data read
//     once first) and, when the budget allows, cold (the data dropped
//     from the page cache with POSIX_FADV_DONTNEED before every pass;
//     directories and inodes stay cached), interleaved, in up to 5
//     rounds, and the medians are kept. Every byte delivered is hashed, so
//     a path that maps the data cannot win by not touching it.
//  4. Recommend picks the fastest candidate in the state the data is in
//     now (unless it beats the baseline by less than 5%: then the
//     baseline), says how it compares with the baseline and, when the
//     other cache state has a different winner, says so too; the Auto
//     check says whether internal/auto's rules pick the same in each state;
//     Snippet gives the code.
//
// Nothing the user owns is modified: files and directories are only
// opened read-only (O_NONBLOCK, so that a FIFO never blocks), stat'ed,
// mapped without being written, read, and advised to leave the page cache.
// Dirty pages cannot be dropped; POSIX_FADV_DONTNEED starts their
// writeback (as the kernel would soon anyway), so the first drop is
// retried for a moment, and a drop that still did not take is reported and
// its figures are not used. No file is written, renamed, truncated,
// fsync'ed or chmod'ed; access times may change, as with any read.
//
// Figures are measured in this process (not in a child per run, as iopath
// bench does): CPU time comes from getrusage around each pass and
// includes the Go runtime's and the hashing. They are for choosing a path
// on this machine, not for publishing; use iopath bench for that.
//
// With Options.PerfDir, the trial is recorded with perf (package perf),
// switched on only while a candidate reads: each measurement gets the
// breakdown of its CPU (Measurement.Perf) and a pprof profile in PerfDir
// (ProfileFile), the only files Run writes.
//
// Run is not safe to call concurrently with itself on the same data: the
// cold trial of one would be warmed by the other. Linux only.
package advise
