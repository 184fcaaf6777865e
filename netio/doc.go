// Package netio holds iopath's socket server engines behind one contract,
// each an echo server: every byte a client sends comes back to it, in
// order, on the same connection.
//
//   - net: a goroutine per connection on Go's netpoller (package net).
//   - epoll: one event loop per core on raw epoll, with non-blocking
//     sockets, a SO_REUSEPORT listener per loop and batched writes. It is
//     the like-for-like baseline for io_uring.
//   - io_uring: one completion loop per core, each on a ring owned by a
//     goroutine locked to its OS thread, with multishot accept, multishot
//     recv into a provided buffer ring and batched sends.
//
// Listen starts one by name. Every engine keeps the same promises, which
// the conformance tests check for each of them:
//
//   - Bounded memory: a connection holds at most Config.BufSize bytes
//     received but not yet echoed (io_uring: twice that, since what it
//     receives in one pass is sent in the next). When that is full the
//     engine stops reading the connection until the peer reads
//     (backpressure), so a slow reader cannot grow the server.
//   - A connection limit: beyond Config.MaxConns the engine accepts and
//     closes at once, and counts the refusal.
//   - No silent starvation: an accept that fails for want of descriptors
//     (EMFILE once RLIMIT_NOFILE is reached, ENFILE) or memory is counted
//     (Stats.AcceptErrors) and said through Config.Log, at most once a
//     second; the engine stops accepting for AcceptPause, serves the
//     connections it has meanwhile, and accepts again. The connections
//     that wait are in the listen queue, unserved, until descriptors free
//     up: Stats.Peak, the most connections open at once, shows how many
//     were served together.
//   - Resets and half-closes: a reset connection is closed and counted; a
//     half-closed one gets every byte it sent echoed, then the server's
//     FIN.
//   - Shutdown stops accepting, echoes what the engine has already read
//     from each connection (bytes still in the kernel's receive queue are
//     not read), half-closes it, waits for the peer to close, and closes
//     every fd when the context ends at the latest.
package netio
