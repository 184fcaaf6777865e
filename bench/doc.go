// Package bench is iopath's runner: a workload (file, pattern, block size,
// workers, queue depth, cache state, consumer) times a set of engines times
// a number of runs gives a Report. It prints nothing and parses no flags.
//
// Every run is a fresh child process (the same binary, started with the
// environment variable IOPATH_BENCH_CHILD=1; see ChildMain), so the resource
// usage, page faults, mappings and GC state of one engine never leak into
// another's figures. Runs are interleaved — A B C, A B C, ... — so that drift
// of a shared machine hits every engine alike.
//
// Before each run the parent puts the file in the asked cache state and
// measures its residency with mincore: warm (read fully beforehand), cold
// (dirty pages flushed, then posix_fadvise DONTNEED) or direct (O_DIRECT; the
// page cache is bypassed, and mmap is not applicable).
//
// The child times only the measured phase (open, read, consume, close);
// one-time setup (rings, buffers) is reported apart. CPU and faults are the
// child's getrusage(RUSAGE_SELF) over that phase, so they include io_uring's
// io-wq worker threads, which are threads of the process.
package bench
