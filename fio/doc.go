// Package fio runs fio, the flexible I/O tester, as a "twin" of an iopath
// read or write engine on the same file and workload, and parses its JSON
// output, so that `iopath bench --fio` can show fio's rows beside ours.
//
// # Twins
//
// Each iopath engine has the fio ioengine that makes the same system calls
// (Twin):
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
// and each write engine (TwinWrite; Job.Write):
//
//	iopath    fio        calls
//	write     sync       write(2) at the file position (lseek before a random block)
//	pwrite    psync      pwrite(2)
//	pwritev   vsync      lseek(2), then writev(2) of Job.Vectors adjacent blocks, sequential pattern
//	          pvsync     pwritev(2) of one block, random pattern or Vectors 1
//	mmap      mmap       memcpy into a shared mapping of the file
//	io_uring  io_uring   IORING_OP_WRITE_FIXED on a registered file (see "Writes")
//
// null has no twin. Engines without a queue run with iodepth=1; io_uring with
// the same queue depth as ours. No fio engine makes one pwritev(2) of k
// buffers, as our pwritev does: vsync makes the same call as writev(2)
// after an lseek(2) to its first block (seen with strace: 32 writev(2) of
// 4 buffers and 33 lseek(2) for 128 blocks), pvsync one pwritev(2) per
// block. (readv's twin seeks alike: 32 readv(2) and 33 lseek(2).)
//
// # The workload
//
// Job.Args builds one fio job per iopath worker (--numjobs, with
// --group_reporting so that fio reports them as one): job w reads (a write
// job: writes) bytes [w*share, (w+1)*share) of the file (--size=share,
// --offset_increment=share), sequentially (--rw=read, --rw=write) or every
// block once in a seeded random order (--rw=randread, --rw=randwrite, with
// fio's default random map and --randseed). share is the file size rounded
// down to a multiple of Workers*BlockSize, divided by Workers, so every fio
// job covers whole blocks of its own region. Two differences from iopath
// follow, both small for files much larger than Workers*BlockSize:
//
//   - fio issues only full-size blocks: given a size that is not a multiple
//     of bs it stops at the last whole block (verified with fio 3.33: a
//     10000-byte file read with bs=4096 gives io_bytes=8192). The tail of
//     fewer than Workers*BlockSize bytes is therefore not read (written) by
//     fio, while iopath's engines cover it (their last block may be short).
//     Job.PassBytes says how many bytes one fio pass covers.
//   - iopath's random pattern deals a permutation of the whole file to the
//     workers, so each worker reads blocks from all over the file; each fio
//     job covers its own region in random order. Every block is read
//     (written) once per pass in both; the order differs, and so does the
//     seeded sequence.
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
// # Safety: fio never creates, lays out, extends, truncates or removes the file
//
// A read job is read-only: --readonly (fio refuses any write, and any
// layout: "refusing extend of file due to read-only") and
// --allow_file_create=0 (a missing file is an error, never created). Run
// also checks before starting fio that the file exists, is a regular file
// and is at least PassBytes long.
//
// A write job cannot be --readonly. This is what fio 3.33 does with a write
// job's file (--rw=write, --allow_file_create=0; run on scratch files under
// strace -f -e trace=openat,unlink,ftruncate,fallocate and the writes):
//
//   - Given a file at least as long as the job (--size equal to the file's
//     size, or smaller), fio opens it O_RDWR (with O_DIRECT or O_DSYNC when
//     asked), without O_CREAT or O_TRUNC, never unlinks, truncates or
//     fallocates it, and writes only within it (psync: 128 pwrite64 of 128
//     KiB, the last ending at 16 MiB, on a 16 MiB file; the same inode and
//     size after). Every engine here, every sync mode, two jobs, the same.
//   - Given a shorter file, fio lays it out again: it unlinks the file, then
//     opens the name O_WRONLY (adding O_TRUNC with --overwrite=1 and for the
//     mmap engine) to write it out anew, and with --allow_file_create=0 that
//     open fails with ENOENT: the job fails and the file is gone. Neither
//     --overwrite=1, --fallocate=none or keep, --unlink=0 (the default),
//     --file_service_type, --create_only=1 nor --fill_device=1 prevents
//     the unlink (--fallocate only matters after it).
//   - Only --create_on_open=1 skips the layout: fio opens the file as it is
//     and writes past its end (psync: the file grew to the job's size, the
//     same inode; mmap: SIGBUS, fio died, the file was left as it was). A
//     missing file still fails its open with --allow_file_create=0.
//   - --file_append=1 lays out the file to offset+size with one fallocate
//     of the whole new length before writing past the old end.
//   - --unlink and --unlink_each_loop (removing the file after the job)
//     default to off; Args never sets them.
//
// So a write job runs with --create_on_open=1 --allow_file_create=0, and
// Run first checks that the file exists, is a regular file and is exactly
// Job.FileSize bytes long: iopath's bench creates and lays out the file
// before the twin runs, and fio then writes over its first PassBytes
// bytes. The file keeps its inode and size (TestRunWriteTwins checks
// both, and that no other file appears beside it).
//
// # Writes: the sync modes
//
// iopath's sync modes (Job.Sync) become:
//
//	iopath    fio
//	none      (no option): the data stays in the page cache
//	end       --end_fsync=1, and one pass whatever MinTime says
//	every:N   --fdatasync=N (pwritev's vsync twin: N rounded up to a multiple of Vectors)
//	dsync     --sync=dsync (O_DSYNC; fio 3.24 or newer); mmap: --fdatasync=1
//	direct    --direct=1 (Job.Direct), no sync option
//
// and differ from ours as follows (fio 3.33, read in its source and seen
// with strace and the io_uring tracepoints):
//
//   - end: fio makes its end fsync once per job when the job's I/O is
//     done, through the engine (fsync(2); the mmap engine msync(MS_SYNC)s
//     its mapping; io_uring sends an FSYNC request). In a time-based run
//     that is once after all its passes (seen: one fsync after 53 passes in
//     1 s), where iopath makes one per pass, so an end twin makes one pass.
//     With several workers each fio job makes its own (the first flushes
//     whatever of the file is dirty then); iopath makes one after all of
//     its workers.
//   - every:N: fio makes an fdatasync when its count of writes is a
//     multiple of N, before the next write: after every N-th write but not
//     after a job's last (128 blocks, N=4: 31 fdatasyncs; iopath makes 32).
//     The count runs on across the passes of a time-based run. Our pwritev
//     counts whole calls: with k blocks per call it syncs after the call
//     that reaches N, every ceil(N/k)*k blocks, and its vsync twin gets
//     that N. (Given an N that is not a multiple of k, fio cuts writev(2)
//     calls short and syncs less often; seen: --fdatasync=3, k=4, 16 blocks:
//     writev(2) of 3, 4, 2, 4, 2 and 1 blocks, an fdatasync after the 3rd,
//     9th and 15th.)
//   - io_uring syncs: fio neither drains its queue before a sync nor waits
//     for the writes in flight (no IOSQE_IO_DRAIN), and until the first sync
//     completes it makes another for each free slot (queue depth 8, 128
//     writes, N=4: 74 to 84 FSYNC requests, where psync makes 31). Ours
//     sends one FSYNC per N writes, with IOSQE_IO_DRAIN.
//   - io_uring and fixed buffers: fio (3.33, and still 3.42-135) reuses each
//     request's submission entry and, preparing a sync, does not clear the
//     buf_index a WRITE_FIXED left there; the kernel refuses such an FSYNC
//     (EINVAL), and fio ignores errors of syncs. Seen: --fdatasync=4 at queue
//     depth 8, 58 of 63 FSYNCs refused; --end_fsync=1's one FSYNC refused
//     for 127, 130 and 133 blocks (it went through for 128). So the io_uring
//     twins of end and every:N run without --fixedbufs: their writes are
//     IORING_OP_WRITE from unregistered buffers, ours WRITE_FIXED.
//   - mmap: fio's mmap engine makes every sync (fsync, fdatasync, end
//     fsync) an msync(MS_SYNC) of the job's whole mapping (ours msyncs the
//     last N blocks); it refuses syncs with blocks that are not whole pages
//     (Validate says so). A mapping takes no O_DSYNC, so the dsync twin
//     msyncs after every block (ours msyncs the block).
//   - dsync and direct: the open flags, as ours.
//
// iopath's append pattern (writes past the end, the file growing) has no
// twin: fio's --file_append=1 is --offset at the file's size with
// positioned writes, into a file it first lays out to the final size, and
// a twin never extends the file. Job.Append makes Args say so. fio before
// 3.42 has another limit, for reads as for writes: its mmap engine maps
// each job's region from offset 0, so with several workers the jobs after
// the first use the first one's region, with an mmap and munmap per block
// (Info.Check, which Run calls, refuses such a job).
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
//   - Writes: fio's runtime includes its end fsync, which it makes inside
//     its I/O loop, before it takes the job's runtime (seen: a 256 MiB psync
//     write, runtime 148 ms without --end_fsync, 532 ms with it, its fsync
//     taking 260 ms), so its bandwidth counts the fsync as ours does. fio
//     does not time the end fsync as a sync, though: it is not in
//     Result.SyncCount nor in the sync latencies (fio's "sync" section
//     counts the syncs of --fdatasync=N only).
//   - Consumption: fio does nothing with the data it reads (its mmap engine
//     copies each block into a buffer, nothing more). Compare with iopath
//     --consume none, not with the default checksum. It writes its own
//     buffers: random bytes, a few of them changed before each write
//     (scramble_buffers), as iopath's write Source may do.
//   - Latency: Result's percentiles are fio's total latency (lat_ns,
//     submission to completion, --lat_percentiles=1), which matches iopath's
//     "issue to data available" per block; for a write, submission to the
//     write's completion (for a buffered write, the copy into the page
//     cache), the syncs timed apart (Result.SyncLatP50Ns ...), as iopath
//     times them. fio's percentiles are the midpoints
//     of log-linear histogram buckets (1/64 of a power of two wide), so the
//     top one can exceed the maximum slightly.
//   - CPU: fio measures each job's own thread (getrusage RUSAGE_THREAD) from
//     the start of its I/O to its end, in whole milliseconds. Its usr_cpu and sys_cpu are
//     percentages of the job's runtime; with group_reporting fio sums both
//     the CPU times and the job runtimes of all jobs (job_runtime is the sum),
//     so usr_cpu is the mean per job and usr_cpu/100*job_runtime is the total
//     CPU time of all jobs, which is what Result.UserNs and SysNs hold. They
//     leave out fio's setup, its main process and io_uring's kernel threads
//     (the SQPOLL thread; the io-wq workers that carry out syncs and the
//     writes the ring cannot complete inline): with --sqthread_poll the polling thread's CPU (up to a whole core) is in
//     none of them (seen: 1 s of SQPOLL reads, usr_cpu 99%, sys_cpu 0%,
//     while the process spent 1 s in the kernel). Result.ProcessUserNs and
//     ProcessSysNs are the rusage of fio and the job processes it reaped
//     (wait4), which includes all of that; iopath's
//     cpu_s_per_gib includes its io_uring kernel threads too.
//
// fio 3.18 or newer is needed (total-latency percentiles reported beside
// completion latency in JSON arrived in 3.18; the io_uring engine in 3.13);
// the dsync twins need 3.24, the mmap twin with several workers 3.42
// (Info.Check).
package fio
