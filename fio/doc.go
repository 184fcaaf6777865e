// Package fio runs fio, the flexible I/O tester, as a "twin" of an iopath
// engine on the same file and workload, and parses its JSON output, so that
// `iopath bench --fio` can show fio's rows beside ours.
//
// # Twins
//
// Each iopath engine has the fio ioengine that makes the same system calls:
//
//	iopath    fio        calls
//	read      sync       read(2) at the file position (lseek before a random block)
//	pread     psync      pread(2)
//	readv     vsync      readv(2) of Job.Vectors adjacent blocks, sequential pattern
//	          pvsync     preadv(2) of one block, random pattern or Vectors 1
//	mmap      mmap       memcpy out of a mapping of the file
//	io_uring  io_uring   IORING_OP_READ_FIXED on a registered file
//	                     (--fixedbufs --registerfiles, --sqthread_poll with SQPOLL)
//
// null has no twin. Engines without a queue run with iodepth=1; io_uring with
// the same queue depth as ours.
//
// # The workload
//
// Job.Args builds one fio job per iopath worker (--numjobs, with
// --group_reporting so that fio reports them as one): job w reads bytes
// [w*share, (w+1)*share) of the file (--size=share, --offset_increment=share),
// sequentially (--rw=read) or every block once in a seeded random order
// (--rw=randread with fio's default random map and --randseed). share is
// the file size rounded down to a multiple of Workers*BlockSize, divided
// by Workers, so every fio job reads whole blocks of its own region. Two
// differences from iopath follow, both small for files much larger than
// Workers*BlockSize:
//
//   - fio issues only full-size blocks: given a size that is not a multiple
//     of bs it stops at the last whole block (verified with fio 3.33: a
//     10000-byte file read with bs=4096 gives io_bytes=8192). The tail of
//     fewer than Workers*BlockSize bytes is therefore not read by fio, while
//     iopath reads it (its last block may be short). Job.PassBytes says how
//     many bytes one fio pass covers.
//   - iopath's random pattern deals a permutation of the whole file to the
//     workers, so each worker reads blocks from all over the file; each fio
//     job reads its own region in random order. Every block is read once per
//     pass in both; the order differs, and so does the seeded sequence.
//
// Cache states map to fio as: warm → --invalidate=0 (fio otherwise drops the
// file's pages before each job, and its "warm" figures would be cold ones);
// cold → the caller drops the cache and Job.Invalidate adds --invalidate=1;
// direct → --direct=1. Warm and direct runs repeat passes for Job.MinTime
// (--time_based --runtime=Nms; fio stops mid-pass when the time is up, where
// iopath finishes its pass); cold runs make one pass.
//
// fio hints its access pattern to the kernel by default (fadvise_hint=1:
// posix_fadvise SEQUENTIAL or RANDOM on the file, posix_madvise on a
// mapping). iopath's read, pread, readv and io_uring give no hint, so their
// twins run with --fadvise_hint=0 (it matters for cold runs: FADV_RANDOM
// turns readahead off, FADV_SEQUENTIAL doubles it); iopath's mmap does
// madvise the mapping, so the mmap twin keeps fio's default.
//
// Every job is read-only: --readonly (fio refuses any write), and
// --allow_file_create=0 (a missing file is an error, never created). Run
// also checks before starting fio that the file exists, is a regular file
// and is at least PassBytes long: with a size larger than the file and
// without --readonly, fio 3.33 unlinks the file to lay it out again (and
// with allow_file_create=0 then fails, leaving it deleted).
//
// # What differs between fio's figures and iopath's
//
//   - Bandwidth: fio's runtime is the time of its I/O loops. Each job opens
//     the file (and the mmap engine maps its region) once and keeps it open
//     across passes (seen with strace: one openat and one mmap in a
//     time-based run of thousands of passes), where iopath opens and
//     closes the file on every pass and times all of it (in warm runs its
//     mmap engine keeps each worker's mapping from pass to pass while the
//     file is the same, as fio does, and maps it again when it was
//     replaced). fio
//     reports runtime in whole milliseconds, so runs shorter than ~100 ms
//     have a coarse Result.BytesPerS; use MinTime.
//   - Consumption: fio does nothing with the data it reads (its mmap engine
//     copies each block into a buffer, nothing more). Compare with iopath
//     --consume none, not with the default checksum.
//   - Latency: Result's percentiles are fio's total latency (lat_ns,
//     submission to completion, --lat_percentiles=1), which matches iopath's
//     "issue to data available" per block. fio's percentiles are the midpoints
//     of log-linear histogram buckets (1/64 of a power of two wide), so the
//     top one can exceed the maximum slightly.
//   - CPU: fio measures each job's own thread (getrusage RUSAGE_THREAD) from
//     the start of its I/O to its end, in whole milliseconds. Its usr_cpu and sys_cpu are
//     percentages of the job's runtime; with group_reporting fio sums both
//     the CPU times and the job runtimes of all jobs (job_runtime is the sum),
//     so usr_cpu is the mean per job and usr_cpu/100*job_runtime is the total
//     CPU time of all jobs, which is what Result.UserNs and SysNs hold. They
//     leave out fio's setup, its main process and io_uring's kernel threads:
//     with --sqthread_poll the polling thread's CPU (up to a whole core) is in
//     none of them (seen: 1 s of SQPOLL reads, usr_cpu 99%, sys_cpu 0%,
//     while the process spent 1 s in the kernel). Result.ProcessUserNs and
//     ProcessSysNs are the rusage of fio and the job processes it reaped
//     (wait4), which includes all of that; iopath's
//     cpu_s_per_gib includes its io_uring kernel threads too.
//
// fio 3.18 or newer is needed (total-latency percentiles reported beside
// completion latency in JSON arrived in 3.18; the io_uring engine in 3.13).
package fio
