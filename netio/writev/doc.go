// Package writev measures four ways of sending a response made of k parts
// over a TCP connection, for `iopath net bench --writev`:
//
//   - writes: one (*net.TCPConn).Write per part, k write(2) calls; with
//     TCP_NODELAY (Go's default) each part leaves as a segment of its own.
//   - coalesced: the parts copied into one buffer and one Write.
//   - net.Buffers: (*net.Buffers).WriteTo on the *net.TCPConn, which Go
//     turns into one writev(2) (more only if the kernel takes part of it,
//     or above 1024 parts).
//   - io_uring: one SENDMSG with k iovecs per response, submitted and
//     waited for in one io_uring_enter, on a ring owned by the sending
//     goroutine, locked to its thread.
//
// A response of k parts has part sizes drawn from [MinPart, MaxPart]
// (64 B–1 KiB by default) and pseudo-random content, both fixed by the
// seed and k, so every way sends the same bytes. The first 8 bytes of
// each response are its sequence number. The other end of the loopback
// connection is drained by a reader goroutine that checks every byte
// against the expected stream: a byte wrong, lost, duplicated or out of
// order fails the run.
//
// # What is measured
//
// The sender runs on a goroutine locked to its OS thread, so the figures
// are that thread's alone:
//
//   - CPU: CLOCK_THREAD_CPUTIME_ID before and after the run. It includes
//     the kernel's work on the send path (on loopback that reaches through
//     TCP receive processing, which runs in the sender's context), and Go's
//     own cost for the Go ways (the poller's bookkeeping, and parking when
//     the socket is full), but not the reader's.
//   - System calls: for the three Go ways, the thread's syscw counter in
//     /proc/thread-self/io, which the kernel increments for every write(2)
//     and writev(2) — those Go makes on its own, partial writes and EAGAIN
//     retries included — so the count is measured, not assumed. For
//     io_uring, the io_uring_enter calls the ring made (and syscw is
//     checked to stay 0). The Go runtime's other calls on the thread
//     (futex when parking) are not counted.
//   - Wall time per response, which on a 2-core machine also reflects the
//     reader competing for a core.
//
// Run measures a matrix of ways and part counts, interleaved (A B C D,
// A B C D, ...), each run on a fresh connection; netresult.WritevMedians
// reduces the runs, and package netbench runs it for `iopath net bench
// --writev`.
//
// Linux only; io_uring needs Linux 5.18 for MSG_WAITALL on SENDMSG
// (partial sends finished by the kernel).
package writev
