// Package perf records iopath's runs with Linux perf, kernel frames and
// Go frames together, and turns each recording into what iopath shows: a
// pprof profile (Samples.WriteProfile: go tool pprof -http opens one
// flame graph with the kernel beneath the Go code), a breakdown of where
// the CPU went (Samples.Breakdown: user code, Go runtime, syscall
// entry/exit, kernel copies, page faults, io_uring, the network stack,
// the rest of the kernel) and a pruned call tree for the HTML report's
// flame graphs (Flame).
//
// A recording samples cpu-clock, a timer that works in a VM without a
// PMU, at perf's default 4000 Hz per CPU, with frame-pointer call graphs
// (Go keeps frame pointers; the kernel unwinds its own frames). It starts
// with its events off: the measured phase switches them on and off
// through perf's control FIFOs (internal/perfctl), from inside the
// recorded child (Wrap) or from the process that drives it (Attach).
// Probe says whether this machine allows it (perf installed,
// perf_event_paranoid, kptr_restrict, a seccomp profile) and, when not,
// how to allow it.
//
// perf's own scripts (the Perl and Python ones) are not used: perf
// script's plain text is parsed here (Parse).
package perf
