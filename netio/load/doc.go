// Package load is iopath's load generator for echo servers: it opens many
// TCP connections to a server (one of netio's engines, or any server that
// echoes), drives them in one of three modes for a bounded time, checks
// every byte that comes back, and reports throughput, latency and CPU.
//
// Modes (ParseMode):
//
//   - pingpong: each connection writes a message of Config.Size bytes,
//     reads exactly that many back, and writes the next.
//   - pipeline:K: each connection keeps K messages in flight; every
//     message that comes back lets the next one go.
//   - stream: each connection has a writer that never waits for a message
//     and a reader; every Size bytes echoed count as one message.
//
// A connection whose bytes in flight may exceed what the kernel's socket
// buffers hold has a writer and a reader goroutine; its writer stays at
// most a few MiB ahead of its reader (256 MiB over all connections), so
// that thousands of streams do not push the kernel's TCP memory into its
// pressure state, where every socket crawls.
//
// With Config.Rate > 0 pingpong and pipeline run open loop: each
// connection sends on a schedule (Rate/Conns messages per second, with a
// random phase) whatever the server does, and latency is counted from the
// time a message was meant to go, so a server that stalls shows up in the
// tail instead of slowing the client down (coordinated omission). A
// message due in the window that has not come back by its end (the
// server's backpressure kept it from going, or its echo is late) is
// counted too: it enters the histogram with the window's end minus the
// time it was due, a lower bound of its latency, and netresult.Load.Unfinished
// says how many did; otherwise a server that stalls for the last part of
// the window would leave no trace in the latency figures.
//
// Verification: the bytes each connection sends are a window onto one
// pseudo-random block of a prime length (about 1 MiB), starting at an
// offset that is different for every connection (up to 1,000,000
// connections) and advancing with the connection's byte count. The echo
// is compared with bytes.Equal against the same window, so a byte that is
// wrong, missing, duplicated, or belongs to another connection or another
// place in the stream is caught at the cost of a memcmp; the only
// undetectable error is a shift by an exact multiple of the block length.
// The block's length is one of two primes, chosen so that it does not
// divide the message size: then no message's bytes repeat those of any
// of the million messages before it, and a server that echoes an earlier
// message in place of the next is caught too.
//
// Run is bounded: it dials at most Config.Conns connections (checked
// against RLIMIT_NOFILE first), runs Config.Warmup + Config.Duration, then
// waits at most Config.Drain (≤ 2 s) for outstanding echoes, closes every
// connection and returns. Connections that fail, bytes that never come
// back and bytes that come back wrong are counted in the netresult.Load, and
// netresult.Load.Err reports them.
//
// The end of a connection is checked too: once it owes and is owed
// nothing it sends its FIN (shutdown SHUT_WR) and reads until the
// server's, within the same Drain. An echo server has nothing left to
// send and answers with its own FIN once it has echoed everything
// (netio's engines do), so this costs one round trip; every byte that
// still arrives (a last message echoed twice, junk) counts as Corrupted
// and fails the connection ("N bytes after the last echo"). A server that
// never sends its FIN is within its rights (TCP lets it keep its half
// open) and has echoed every byte, so it is not blamed: the wait ends
// when the drain does, which then takes all of Config.Drain, counting
// nothing lost and only the bytes that came before.
//
// A server that serves some connections and leaves the others waiting
// (in its listen queue when it is out of file descriptors, say) must not
// pass as a server that serves fewer connections fast: a connection that
// has had no byte echoed by the end of the warm-up (or 1 s from the start,
// if that is later; a shorter run is not checked) fails, even if the
// server serves it later, and netresult.Load.NoEcho says how many did. netresult.Load.Carried
// counts the connections that had bytes echoed within the window, the ones
// its figures come from.
//
// With Config.ServerPID the server's CPU over the window is read from the
// kernel's CPU clock of that process (nanoseconds, every thread, exited
// ones too), or from /proc/PID/stat (10 ms ticks) when the kernel refuses
// the clock; netresult.Load.ServerCPUSource says which. A pid that is not the
// server's is an error rather than a figure: Run checks before the run
// that the process holds a socket listening on the port (when it can see
// that), and after it that the process used CPU time while the requests
// went through.
//
// Two drivers (Config.Client) put the load on. The net client drives each
// connection from one goroutine on Go's net package that writes, then
// reads (two, a writer and a reader, when it may have more than 32 KiB in
// flight, for open-loop pipelines and for stream). The epoll client, for
// closed-loop pingpong and pipeline:K, takes the connections' sockets
// from Go's dialer and drives them from event loops on raw epoll, one per
// GOMAXPROCS, each a goroutine locked to its thread: per message one send,
// one recv and a share of one epoll_wait, where the net client also pays
// a read that finds nothing, a netpoller wakeup and a goroutine park and
// unpark. By default Run takes epoll for closed loop with at most 32 KiB
// in flight per connection (where that overhead is most of the client's
// cost) and net otherwise; netresult.Load.Client says which ran. Both check the
// same bytes the same way and time the same span. Neither allocates per
// message, and latencies go into shared histograms in batches of 32,
// under a lock per batch.
package load
