// Package filesrv measures four ways of serving a file from the page cache
// over TCP, for `iopath net bench --serve-file`:
//
//   - readwrite: pread(2) into a user buffer, then send(2) of it to the
//     socket: two copies through user space, the baseline.
//   - sendfile: sendfile(2) from the file to the socket: no user copy.
//   - splice: splice(2) from the file into a pipe (sized with
//     F_SETPIPE_SZ to Chunk), then from the pipe to the socket.
//   - io_uring: READ_FIXED into registered buffers, then SEND from them,
//     Depth read→send pairs linked into one chain per io_uring_enter, on
//     a ring owned by the connection's goroutine locked to its thread.
//
// # Protocol
//
// A client sends one byte per request: 'G' asks for the file, 'S' for the
// server's counters. Every response is an 8-byte little-endian length L
// followed by L bytes. A 'G' response is the whole file as Serve found it
// when it opened it: its size is taken once, as a server with a cache of
// open files does, so that the system calls a response costs are those of
// the transfer alone. An empty file is a valid response of length 0 (the
// header only). A file that shrinks while it is served cannot deliver the
// promised L bytes: the server closes the connection at the point where
// the file ran out, so the client sees the response cut short (never a
// hang, and no SIGBUS: nothing is mapped), and Serve reports an error
// naming the path. Requests may be pipelined; they are answered in order.
//
// The header is sent the way a real server sends one: readwrite and
// io_uring put it in front of the first chunk in the same buffer (no extra
// call), sendfile and splice send it first with MSG_MORE (one extra
// send(2) per response, which is what nginx pays too).
//
// # Threads, CPU and system calls
//
// Each connection is served by a goroutine locked to its OS thread, on a
// blocking socket: thread-per-connection, as a C server would be. Its CPU
// time is the thread's own (CLOCK_THREAD_CPUTIME_ID, and schedstat for
// live threads), so it holds the server's work only: the kernel's work for
// the sender (including, on loopback, TCP receive processing that runs in
// the sender's context) but not the client's, nor the Go runtime's
// background threads. The CPU of io_uring's io-wq workers (iou-wrk), which
// are threads of the server's process, is added. In a child process
// (Serve as the main of a re-executed binary, the way `iopath net bench`
// runs it) the whole process's CPU is reported as well.
//
// System calls are counted at the call sites: every recv of a request,
// pread, send, sendfile, splice and io_uring_enter a response costs,
// retries included. Retries are also counted apart (Stats.Retries,
// netresult.FileServe.SyscallRetries): a call a signal cut short (EINTR, or a send,
// sendfile or splice to the socket that moved less than asked, which on a
// blocking socket only a signal does) is made again, and how often that
// happens depends on the scheduling (Go's runtime signals its threads to
// preempt them), not on the method. Setup (accept, the ring, registering
// buffers, the pipe) is not counted. Connections that ask for counters
// ('S') are control connections: their time and calls are left out.
//
// An accept that fails for want of descriptors or memory (EMFILE and
// friends) is counted (Stats.AcceptErrors) and said through
// ServerConfig.Log at most once a second; the server tries again every
// 10 ms. Run fails, saying so, when the server has not accepted every
// connection before the first request, rather than wait for ever on one
// left in the listen queue.
//
// # Use
//
// Serve runs a server on a listener until its context ends; it is the main
// of the child process. Run drives one measurement: it dials Config.Conns
// connections (to Config.Addr, or to a server it starts in this process),
// verifies every byte of every response against the file's content, and
// returns a netresult.FileServe. Bench runs Run over a matrix of sizes
// and methods, interleaved (A B C D, A B C D, ...), and
// netresult.FileServeMedians reduces the runs; package netbench runs
// Bench for `iopath net bench --serve-file`, with each server in a child.
//
// Linux only; io_uring needs Linux 6.1 (SINGLE_ISSUER, DEFER_TASKRUN are
// stepped down when refused, READ_FIXED 5.1, SEND 5.6, MSG_WAITALL retries
// of partial sends 5.18).
package filesrv
