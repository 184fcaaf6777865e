package netio

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

func init() { register("io_uring", listenUring) }

// The io_uring engine is the epoll engine's design with the readiness
// loop replaced by a completion loop: Config.Loops loops, each a goroutine
// locked to its OS thread that owns one ring, one SO_REUSEPORT listener,
// one provided buffer ring, one eventfd and its connections. Loops share
// nothing but the connection count that enforces MaxConns.
//
// The steady state of a connection costs no system call of its own. A
// multishot ACCEPT posts a completion (CQE) per new connection; each
// connection has one multishot RECV that takes buffers from the loop's
// provided buffer ring for every chunk that arrives and posts a CQE naming
// them; the loop sends the chunk back straight from those buffers (no
// copy in user space: the kernel copies them into the socket) and gives
// them back when the send's CQE says they went. A pass over the ready
// CQEs prepares the sends and RECVs they call for; then one io_uring_enter
// submits them all and runs the completion work the kernel holds, and the
// loop waits in io_uring_enter only when that brought no CQE.
//
// Kernel features, with the Linux version each needs:
//
//   - multishot ACCEPT: 5.19; provided buffer rings: 5.19; multishot RECV
//     with a buffer group: 6.0. Listen probes for them (by trying a
//     multishot recv on a socket pair) and fails with ErrNotSupported
//     without them. SEND, SENDMSG, RECV, ACCEPT, CLOSE: 5.6; SHUTDOWN:
//     5.11; ASYNC_CANCEL by fd: 5.19; TIMEOUT: 5.4.
//   - SINGLE_ISSUER (6.0) and DEFER_TASKRUN (6.1): the loop's thread is the
//     only submitter, and the kernel runs completion work (the receive
//     into a buffer, the CQE) only when that thread enters the ring, in
//     one batch, instead of interrupting it. COOP_TASKRUN (5.19) and
//     TASKRUN_FLAG (the kernel flags pending completion work, so that the
//     loop enters the ring only when there is something to do) where
//     DEFER_TASKRUN is refused. uring.New steps these down when the kernel
//     refuses them.
//   - multishot RECV bundles (6.10) and byte limits (sqe->len per receive,
//     sqe->optlen over the request's life, 6.16): a receive fills several
//     buffers at once, and the RECV takes an exact number of bytes, see
//     Backpressure. Probed at Listen; without them the engine arms single
//     RECVs of one buffer instead.
//   - fixed files (Config.FixedFiles): ACCEPT into a sparse registered
//     file table (5.19), so that connections are direct descriptors that
//     cost no entry in the process's fd table and no fd lookup per
//     request. The table has min(MaxConns+64, RLIMIT_NOFILE) slots per
//     loop (the kernel caps it at RLIMIT_NOFILE). A connection beyond a
//     full table is closed by the kernel (ACCEPT takes it from the queue,
//     then fails with ENFILE): the loop counts it as refused and backs
//     off as for EMFILE.
//   - SQPOLL (Config.SQPoll): a kernel thread per ring polls the SQ, so
//     submitting costs no system call, at the price of a core that the
//     thread keeps busy while the loop is.
//
// Backpressure: a connection holds at most twice Config.BufSize bytes
// received and not yet sent, exactly: its receive budget. What a pass
// receives is sent at the next io_uring_enter and counts until the pass
// after, so the budget is also what a connection echoes per pass, and
// with BufSize alone streams cost up to 1.6× the CPU of epoll's (AMD
// EPYC, docs/net.md), whose loop reads and echoes up to four BufSize per
// wakeup (see uringRecvRounds); twice BufSize is the bound the
// conformance suite holds every engine to. With the RECV limits the loop
// arms a connection's RECV when at least a quarter of the budget is free,
// with a limit of what is free: a bundle RECV cuts each receive to the
// limit left, so what the connection holds never exceeds the budget. When
// the peer does not read, the send waits in the kernel, the RECV stays
// unarmed, the socket's receive queue fills and TCP's window closes on
// the writer. Without the limits (Linux 6.0 to 6.15) the loop uses single
// RECVs of one buffer, re-armed after each CQE while a buffer's worth is
// free: a RECV more per message, but the same exact bound. (Cancelling a
// multishot RECV at the bound does not bound it: while data is waiting
// the kernel fills buffer after buffer within one io_uring_enter,
// hundreds of KiB on loopback, before the loop sees a CQE.) A connection
// also holds at most twice the buffers its budget fills (at least 4), its
// RECV cancelled past that, so that a peer trickling bytes one at a time
// cannot take a buffer per byte.
//
// Buffers: each loop has 4096 buffers of 4 KiB (16 MiB of address space;
// resident as used). A 64-byte message takes one, a 16 KiB message one
// receive of four; a receive takes up to the budget at once (64 buffers
// at most), as epoll's reads take BufSize: receives of a quarter of it
// cost twice the CPU on pipelined 16 KiB messages (each receive opens the
// peer's TCP window a little, and its pending data comes in small
// pieces). Until a connection's receives fill a buffer, though, its RECV
// asks for one buffer: the kernel gathers every buffer a bundle's length
// may fill before each receive, however few bytes are waiting (see
// uconn.noteRecv).
//
// The ring itself is kept shallow, 256 buffers to start, refilled at each
// pass from a stack of the buffers given back last, so that the kernel
// fills buffers that are still in the CPU's cache: a ring holding all
// 4096 would cycle through 16 MiB and miss the cache on every receive,
// where epoll reads into one hot buffer (measured here: a full ring cost
// about a tenth more CPU per 16 KiB message). Its depth doubles when a
// RECV finds it empty (ENOBUFS) and decays slowly. A RECV that
// ended with ENOBUFS waits in a queue and is re-armed when buffers come
// back; while the free buffers could run out under every RECV waiting to
// be armed, the loop arms only as many as the free buffers hold full
// receives for, each limited to an equal share, and the rest wait their
// turn, so that a dry ring is shared rather than taken whole by whichever
// RECV comes first (measured: turns of a full receive rather than a
// sliver each halve the CPU of 1000 streams of 16 KiB messages).
// A connection whose peer does not read holds no provided buffer for
// long (see Sends); the ring runs dry only when many connections receive
// at once, and then they take turns.
//
// Sends: a connection has at most one send in flight, so its echo goes
// out in order without links. The sends of a pass are prepared at its
// end, so that the chunks of a message that arrived in several receives
// go in one SENDMSG (up to 64 buffers), not one TCP segment per receive.
// A send from the provided buffers tries once (MSG_DONTWAIT) rather than
// wait for room while holding buffers the other connections need: what a
// full socket does not take is copied into a buffer of the connection's
// own (from bufpool, pinned while the kernel reads it; epoll's loop does
// the same with what a partial send leaves), the provided buffers go
// back, and the connection receives nothing more until that copy is sent,
// by a send that waits for room (MSG_WAITALL: the kernel finishes it
// rather than return it short). So only a connection whose peer reads
// slowly holds memory (BufSize at most), and none of it is the ring's.
//
// Entering the ring: the io_uring_enter after a pass, which submits the
// sends and runs the receives' completion work, does the work of a whole
// batch and can take longer than 20 µs. Made as an ordinary Go system
// call it would have the runtime's monitor take the loop's P and wake
// another thread to run it, two context switches per batch. So it is made
// as a raw system call (it never waits), and only a call that waits for
// a CQE, when there is nothing to do, goes through the runtime.
//
// user_data: an op tag (8 bits), a generation (24 bits) and an index into
// the loop's connection table (32 bits), never a Go pointer. A slot is
// reused only after the CQEs of all its requests have been reaped, so a
// CQE for a freed slot means a bug; the generation catches it anyway, and
// the CQE is dropped (its buffers, if any, given back).
//
// Closing: the loop cancels the connection's requests (ASYNC_CANCEL by
// fd), waits for their last CQEs, gives its queued buffers back, then
// closes the socket with a CLOSE request (batched like the rest) and frees
// the slot. Memory the kernel may still write to (buffers, iovecs, the
// eventfd word, the timer) is off the Go heap and lives until the loop
// has reaped every request.
//
// Half-close: after the peer's FIN (a RECV result of 0) the loop sends
// what it holds and closes, which sends our FIN after the data. Shutdown
// stops accepting (cancels the ACCEPT, then closes the listener), cancels
// every RECV, sends what each connection holds, half-closes it with
// SHUTDOWN(SHUT_WR), then reads and drops whatever the peer still sends
// until it closes. Shutdown wakes each loop through an eventfd the loop
// keeps a READ posted on. EMFILE and friends from ACCEPT are counted
// (Stats.AcceptErrors) and stop accepting for AcceptPause (a TIMEOUT
// request) rather than fail again at once.
type uringServer struct {
	shell
	loops []*uloop
}

// uringParams are the sizes a server is built with; tests shrink them
// through uringTestParams.
type uringParams struct {
	bufEntries  int  // provided buffers per loop (a power of two)
	bufSize     int  // bytes per provided buffer
	fileSlots   int  // fixed-file table size per loop (0: min(MaxConns, RLIMIT_NOFILE))
	noRecvLimit bool // single RECVs, as on kernels without the multishot RECV limits
}

var defaultUringParams = uringParams{bufEntries: 4096, bufSize: 4096}

// uringTestParams, when set, replaces defaultUringParams for the next
// Listen; only tests set it.
var uringTestParams *uringParams

// uringProbe caches what probing the kernel found, once the answer is
// conclusive: the probe worked, or the kernel lacks a feature. A probe
// that failed for want of a resource (descriptors, memory) is tried again
// at the next Listen.
var uringProbe struct {
	mu        sync.Mutex
	done      bool
	err       error // not nil: the engine cannot run here
	recvLimit bool  // multishot RECV bundles with the byte limits work
}

func listenUring(cfg Config, ap netip.AddrPort) (Server, error) {
	if err := uringSupported(); err != nil {
		return nil, err
	}
	p := defaultUringParams
	if uringTestParams != nil {
		p = *uringTestParams
	}
	uringProbe.mu.Lock()
	recvLimit := uringProbe.recvLimit && !p.noRecvLimit
	uringProbe.mu.Unlock()
	if cfg.FixedFiles && p.fileSlots == 0 {
		soft, _, err := sys.Nofile()
		if err != nil {
			return nil, fmt.Errorf("io_uring server: RLIMIT_NOFILE: %w", err)
		}
		p.fileSlots = int(min(uint64(cfg.MaxConns)+64, soft, 1<<20))
	}
	s := &uringServer{}
	lfds, err := s.listen("io_uring", cfg, ap)
	if err != nil {
		return nil, err
	}
	for i, lfd := range lfds {
		efd, err := sys.Eventfd(0, sys.EFD_CLOEXEC)
		if err != nil {
			for _, fd := range lfds {
				sys.Close(fd)
			}
			s.closeEventfds()
			return nil, fmt.Errorf("io_uring server on %s: eventfd: %w", s.addr, err)
		}
		// Accepted sockets inherit TCP_NODELAY from the listener, so no
		// setsockopt per connection (which a direct descriptor could not
		// take anyway). Go's net sets it on every connection: so do we,
		// so that the engines compare like for like.
		sys.SetNoDelay(lfd)
		l := newUloop(s, i, lfd, efd, p, recvLimit)
		s.loops = append(s.loops, l)
		s.addLoop(efd, &l.st)
	}
	ready := make(chan error, len(s.loops))
	s.wg.Add(len(s.loops))
	for _, l := range s.loops {
		go l.run(ready)
	}
	var first error
	for range s.loops {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		// Loops that started are running: stop them the hard way.
		s.command(modeForce)
		s.wg.Wait()
		s.closeEventfds()
		return nil, first
	}
	return s, nil
}

// uringSupported says why the engine cannot run here, wrapping
// ErrNotSupported (or, when the probe ran short of a resource, that
// error), or returns nil. The opcodes are features.HaveOps's answer (its
// probe has set up a ring, registered with it and entered it, so a
// refusal of any of the three io_uring calls is its reason).
//
// probeRecvMultishot stays beside it because opcodes do not say enough:
// RECV is listed since Linux 5.6, but multishot RECV needs 6.0, provided
// buffer rings 5.19, and the byte limits the engine uses for backpressure
// 6.16, none of which the opcode list shows; only a request tried on a
// socket pair tells. Its answer is cached once conclusive, like the probe.
func uringSupported() error {
	if err := features.HaveOps("ACCEPT", "RECV", "SEND", "SENDMSG", "ASYNC_CANCEL", "CLOSE", "SHUTDOWN", "READ", "TIMEOUT"); err != nil {
		return fmt.Errorf("io_uring server: %w", err) // a resource error is not cached
	}
	uringProbe.mu.Lock()
	defer uringProbe.mu.Unlock()
	if !uringProbe.done {
		limits, err := probeRecvMultishot()
		if err != nil && !errors.Is(err, ErrNotSupported) {
			return err
		}
		uringProbe.done, uringProbe.recvLimit, uringProbe.err = true, limits, err
	}
	return uringProbe.err
}

// probeRecvMultishot tries a multishot RECV into a provided buffer ring
// on a socket pair, first with the byte limits and then without. It
// reports whether the limits work, or an error wrapping ErrNotSupported
// when multishot RECV does not (Linux before 6.0) or buffer rings cannot
// be registered (before 5.19).
func probeRecvMultishot() (limits bool, err error) {
	notSupported := func(why string, err error) (bool, error) {
		return false, fmt.Errorf("io_uring server: %w: %s: %v", ErrNotSupported, why, err)
	}
	// classified is err from an io_uring call: a refusal by policy wraps
	// ErrNotSupported with the probe's reason; a resource error (EMFILE,
	// ENOMEM) is itself, and is probed again at the next Listen.
	classified := func(err error) (bool, error) {
		return false, fmt.Errorf("io_uring server: probe: %w", features.Classify(err))
	}
	r, err := uring.New(8, uring.Options{})
	if err != nil {
		return classified(err)
	}
	defer r.Close()
	br, err := r.RegisterBufRing(0, 2, 64)
	if err != nil {
		if !errors.Is(err, sys.EINVAL) {
			return classified(err)
		}
		return notSupported("provided buffer rings (Linux 5.19)", err)
	}
	defer br.Close()
	fds, err := sys.Socketpair()
	if err != nil {
		return false, fmt.Errorf("io_uring server: probe: socketpair: %w", err)
	}
	defer sys.Close(fds[0])
	defer sys.Close(fds[1])
	cqes := make([]uring.CQE, 4)
	// reap waits for the CQE with user_data ud, and returns it.
	reap := func(ud uint64) (uring.CQE, error) {
		for {
			if _, err := r.SubmitAndWait(1); err != nil {
				return uring.CQE{}, err
			}
			n := r.PeekBatch(cqes)
			r.Advance(n)
			for _, c := range cqes[:n] {
				if c.UserData == ud {
					return c, nil
				}
				if c.Flags&uring.CQEFBuffer != 0 {
					br.Recycle(c.BufferID())
					br.Publish()
				}
			}
		}
	}
	// try arms a multishot RECV, with the limits or without, on a socket
	// with a byte waiting, so that it completes at once: with the limit
	// of 1 its first CQE is also its last; without, it stays armed and is
	// cancelled. It reports -EINVAL (the kernel does not know the
	// request) as einval.
	try := func(withLimits bool) (einval bool, err error) {
		if _, err := sys.Write(fds[1], []byte{1}); err != nil {
			return false, fmt.Errorf("io_uring server: probe: write: %w", err)
		}
		sqe := r.GetSQE()
		sqe.PrepRecvMultishot(int32(fds[0]), br.Group(), 0, 1)
		if withLimits {
			// The limits come with bundles (Linux 6.10) on every kernel
			// that has them; the engine uses them together.
			sqe.IOPrio |= uring.RecvsendBundle
			sqe.SetRecvLen(64)
			sqe.SetRecvLimit(1)
		}
		c, err := reap(1)
		if err != nil {
			return classified(err)
		}
		if c.Res == -int32(sys.EINVAL) {
			sys.Read(fds[0], make([]byte, 1)) // the byte is still there
			return true, nil
		}
		if c.Res != 1 || c.Flags&uring.CQEFBuffer == 0 {
			return false, fmt.Errorf("io_uring server: probe: multishot recv: result %d, flags %#x, want 1 byte in a provided buffer", c.Res, c.Flags)
		}
		br.Recycle(c.BufferID())
		br.Publish()
		if c.More() {
			r.GetSQE().PrepCancel(1, 0, 2)
			for c.More() {
				if c, err = reap(1); err != nil {
					return classified(err)
				}
			}
		}
		return false, nil
	}
	einval, err := try(true)
	if err != nil || !einval {
		return err == nil, err
	}
	if einval, err = try(false); err != nil {
		return false, err
	}
	if einval {
		return notSupported("multishot recv (Linux 6.0)", sys.EINVAL)
	}
	return false, nil
}
