package load

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iopath/iopath/metrics"
)

// Run phases, in order.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

const (
	// syncMax is the most bytes a connection may have in flight and
	// still be driven by one goroutine that writes, then reads. The
	// kernel's default receive buffer (tcp_rmem 128 KiB, half of it for
	// payload) holds that much of the echo while the goroutine is still
	// writing, so a write never waits on a read that cannot start. Past
	// it a connection gets a writer and a reader goroutine.
	syncMax = 32 << 10
	// streamChunk is the size of a stream writer's writes.
	streamChunk = 64 << 10
	// A split connection's writer stays at most runner.window bytes
	// ahead of its reader: flightBudget over all connections, each
	// between minFlight and maxFlight. Unbounded, a thousand streams
	// fill the kernel's socket buffers past tcp_mem's pressure mark and
	// every socket slows to a crawl (39 MB/s instead of 2.3 GB/s for
	// 1000 streams here): a state of the kernel, not of the server. The
	// floor is small, so that the budget holds up to 16,384
	// connections: a floor of 128 KiB put 1.25 GiB in flight for 10,000
	// (tcp_mem's pressure mark is 1.5 GiB here, for both ends), and the
	// kernel left 4% of the connections without a byte for over a second
	// while the others streamed (pipeline:16 and stream of 16 KiB).
	flightBudget = 256 << 20
	minFlight    = 16 << 10
	maxFlight    = 4 << 20
	// readBudget bounds the read buffers of split connections in all;
	// each gets between minRead and maxRead bytes.
	readBudget = 256 << 20
	minRead    = 4 << 10
	maxRead    = 64 << 10
	// latBatch latencies are kept per connection before they go into a
	// shared histogram under its lock: one lock per latBatch messages.
	// (A histogram per connection would cost 229 KiB each.)
	latBatch = 32
	// tailBuf is the least buffer a connection reads its tail into
	// (readTail): a server that sends junk after the last echo is read
	// in pieces of at least this size, not one byte at a time.
	tailBuf = 16 << 10
)

// runner is one run's shared state.
type runner struct {
	cfg      Config
	size     int64 // message size
	depth    int64 // messages in flight per connection, 0 for stream
	split    bool  // a writer and a reader goroutine per connection
	timeline bool  // Config.Timeline: count completions per shard
	open     bool  // open loop
	interval int64 // open loop: ns between one connection's messages
	window   int64 // split: the most bytes a writer stays ahead
	pat      []byte
	period   int64 // of pat: periodFor(size)

	phase    atomic.Int32
	stop     chan struct{} // closed when phase becomes phaseStop
	aborting atomic.Bool   // set before Run closes connections itself
	// aborted ends when Run closes the connections itself: a reconnect
	// under way stops waiting and dialling.
	aborted     context.Context
	abortedFunc context.CancelFunc
	timedOut    bool // the drain ran out (Run's goroutine only)
	// windowEnd is when the measured window ended (Nanotime, set just
	// before phase becomes phaseStop; 0 when it never began).
	windowEnd int64

	// serverCPU reads the server's CPU time (nil without ServerPID).
	serverCPU func() (time.Duration, error)

	// The no-echo check (checkNoEcho): began is when the connections
	// started (Nanotime), noEchoWait the time the check allowed.
	began      int64
	noEchoOnce sync.Once
	noEchoWait time.Duration

	shards []shard
	conns  []*conn
	left   atomic.Int64  // connections still running
	done   chan struct{} // closed when left reaches 0
	// exited counts the connections' goroutines (net client) until each
	// has returned, not merely closed done: a panic in Progress goes on
	// only after every one has.
	exited sync.WaitGroup
}

// shard is a latency histogram a group of connections flush into.
type shard struct {
	mu sync.Mutex
	h  *metrics.Histogram
	// done counts the clean messages its connections completed in the
	// window, for Config.Timeline's sampler (0 without it).
	done atomic.Int64
	_    [40]byte // one shard per 64-byte cache line: no false sharing
}

// conn is one connection's state. The fields under "reader" are touched
// only by the goroutine that reads (the only one in sync mode), and by
// Run once every goroutine is gone.
type conn struct {
	r    *runner
	id   int
	nc   *net.TCPConn
	base int64 // where the stream starts in the pattern
	buf  []byte

	sent   atomic.Int64   // bytes written
	wdone  atomic.Bool    // split: the writer has stopped
	stamps []atomic.Int64 // send time of message i at i%depth
	done   atomic.Int64   // split: messages completed (c.msgs, published)
	acked  atomic.Int64   // split: bytes received (c.recv, published)
	wake   chan struct{}  // split: the reader made progress
	dead   chan struct{}  // closed by fail
	failed atomic.Bool
	err    error // the failure, unless Run caused it
	// firstEcho is when the first echoed byte came (Nanotime, set once by
	// got; 0 before), noEcho is set by the no-echo check.
	firstEcho atomic.Int64
	noEcho    atomic.Bool
	live      atomic.Int32
	// ncMu guards nc while a reconnect (Config.Reconnect) replaces it,
	// against closes from other goroutines (abort); shut says nc is to
	// stay closed.
	ncMu sync.Mutex
	shut bool
	// reconnects and resent count the connection's reconnects and the
	// messages it sent again (reader's).
	reconnects, resent int64
	// redialErr is the last failed dial of a reconnect under way (nil
	// when none is), for the error of a run that ends meanwhile.
	redialErr atomic.Pointer[error]
	// resetAt, when set, is when the connection resets itself
	// (Config.ResetShare; Nanotime), and reset says it has.
	resetAt int64
	reset   atomic.Bool
	next    int64 // open loop: when the next message is due (Nanotime)
	first   int64 // open loop: when message 0 was due
	timer   *time.Timer

	// reader
	recv       int64 // bytes read and checked
	msgs       int64 // messages completed
	curBad     bool  // the message being received has a wrong byte
	reqs       int64 // window: clean messages
	okBytes    int64 // window: bytes that matched
	corruptAll int64 // whole run: bytes that did not match
	msgsEnd    int64 // messages completed before the window ended
	extra      int64 // bytes the server sent after the last echo
	gotEcho    bool  // c.firstEcho is set
	lat        [latBatch]int64
	nlat       int
	shard      *shard
}

// window returns the stream bytes [off, off+n) of c.
func (c *conn) window(off, n int64) []byte { return expected(c.r.pat, c.r.period, c.base, off, n) }

// fail records the connection's first failure and closes it, which
// wakes its other goroutine.
func (c *conn) fail(err error) {
	if !c.failed.CompareAndSwap(false, true) {
		return
	}
	if !c.r.aborting.Load() {
		c.err = err
	}
	close(c.dead)
	c.closeNC()
}

// closeNC closes the connection's socket for good: a reconnect under way
// gives up.
func (c *conn) closeNC() {
	c.ncMu.Lock()
	defer c.ncMu.Unlock()
	c.shut = true
	c.nc.Close()
}

// recover answers a failure of the connection (err) as Config.Reconnect
// says: without it, the connection fails (false); with it, it dials again
// until it connects (true) or ReconnectFor has passed or the run aborts
// (false: failed). Once connected it sends again, from the first message
// not echoed whole, what it had sent (sent bytes in all), and forgets what
// it had of that message's echo: the new connection echoes it whole.
func (c *conn) recover(err error, sent int64) bool {
	r := c.r
	if !r.cfg.reconnects() || r.aborting.Load() {
		c.fail(err)
		return false
	}
	giveUp := time.Now().Add(cmp.Or(r.cfg.ReconnectFor, DefaultReconnectFor))
	d := newDialer(r.cfg, cmp.Or(r.cfg.ConnectTimeout, DefaultConnectTimeout))
	wait := backoffFirst
	for attempt := 0; ; attempt++ {
		c.nc.Close()
		if attempt > 0 && r.cfg.Reconnect == ReconnectBackoff {
			// Exponential, bounded, with jitter: half to all of it.
			t := time.NewTimer(wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1)))
			select {
			case <-t.C:
			case <-r.aborted.Done():
				t.Stop()
			}
			wait = min(2*wait, backoffMax)
		}
		if r.aborting.Load() || time.Now().After(giveUp) {
			c.fail(fmt.Errorf("%w; not reconnected within %v", err, cmp.Or(r.cfg.ReconnectFor, DefaultReconnectFor)))
			return false
		}
		nc, derr := d.DialContext(r.aborted, "tcp", r.cfg.Addr)
		if derr != nil {
			err = derr
			c.redialErr.Store(&derr)
			continue
		}
		c.redialErr.Store(nil)
		c.ncMu.Lock()
		if c.shut {
			c.ncMu.Unlock()
			nc.Close()
			c.fail(err)
			return false
		}
		c.nc = nc.(*net.TCPConn)
		c.ncMu.Unlock()
		// The echo starts again at the first message not echoed whole.
		from := c.msgs * r.size
		if part := c.recv - from; part > 0 {
			c.recv = from
			c.okBytes = max(0, c.okBytes-part)
		}
		if _, werr := c.nc.Write(c.window(from, sent-from)); werr != nil {
			err = werr
			continue
		}
		c.reconnects++
		c.resent += (sent - from + r.size - 1) / r.size
		return true
	}
}

// resetMidRequest ends the connection with a RST, its request sent and
// its echo owed (Config.ResetShare).
func (c *conn) resetMidRequest() {
	c.nc.SetLinger(0)
	c.reset.Store(true)
	c.closeNC()
}

// exit is called by each of the connection's goroutines as it returns;
// the last one closes the connection.
func (c *conn) exit() {
	if c.live.Add(-1) != 0 {
		return
	}
	c.flushLat()
	c.nc.Close()
	if c.r.left.Add(-1) == 0 {
		close(c.r.done)
	}
}

// waitTurn waits until the connection's next message is due (open
// loop); false when the run stopped or the connection died first.
func (c *conn) waitTurn() bool {
	d := c.next - metrics.Nanotime()
	if d <= 0 {
		return true
	}
	c.timer.Reset(time.Duration(d))
	select {
	case <-c.timer.C:
		return true
	case <-c.r.stop:
	case <-c.dead:
	}
	c.timer.Stop()
	return false
}

// stamp is the time message latency is counted from: when it is due
// (open loop), or now.
func (c *conn) stamp() int64 {
	if c.r.open {
		s := c.next
		c.next += c.r.interval
		return s
	}
	return metrics.Ticks()
}

// runSync drives a connection that fits syncMax in flight from one
// goroutine: write what the window allows, read, check, repeat. When the
// run stops it reads what is still owed, then the tail (readTail), and
// returns. limit > 0 stops after that many messages (for the benchmark).
func (c *conn) runSync(limit int64) {
	defer c.exit()
	r := c.r
	size, depth := r.size, r.depth
	var sent, issued int64
	for {
		if r.phase.Load() < phaseStop && (limit == 0 || issued < limit) {
			if n := depth - (issued - c.msgs); n > 0 {
				if limit > 0 {
					n = min(n, limit-issued)
				}
				if r.open && !c.waitTurn() {
					continue // stopped: drain
				}
				t := c.stamp()
				for i := issued; i < issued+n; i++ {
					c.stamps[i%depth].Store(t)
				}
				w, err := c.nc.Write(c.window(sent, n*size))
				if err != nil && r.cfg.reconnects() {
					// All of it goes again, once reconnected.
					w = int(n * size)
				}
				sent += int64(w)
				c.sent.Store(sent)
				issued += n
				if err != nil {
					if !c.recover(err, sent) {
						return
					}
					continue
				}
				if c.resetAt != 0 && r.phase.Load() == phaseMeasure && metrics.Nanotime() >= c.resetAt {
					c.resetMidRequest()
					return
				}
			}
		}
		owed := sent - c.recv
		if owed == 0 {
			if r.phase.Load() >= phaseStop || (limit > 0 && issued >= limit) {
				c.readTail(sent)
				return
			}
			continue
		}
		if rt := r.cfg.RequestTimeout; rt > 0 {
			c.nc.SetReadDeadline(time.Now().Add(rt))
		}
		m, err := c.nc.Read(c.buf[:min(int64(len(c.buf)), owed)])
		if m > 0 {
			c.got(c.buf[:m])
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && r.cfg.RequestTimeout > 0 {
				err = fmt.Errorf("no echo within the request timeout of %v", r.cfg.RequestTimeout)
			}
			if !c.recover(err, sent) {
				return
			}
		}
	}
}

// runWriter is the writing half of a split connection: one message at a
// time once a slot in flight is free and (open loop) it is due; stream
// writes without waiting for messages. Whatever the mode it stays at most
// about r.window bytes ahead of the reader. On return it wakes the
// reader, which then reads what is still owed.
func (c *conn) runWriter() {
	defer c.exit()
	defer func() {
		c.wdone.Store(true)
		c.nc.SetReadDeadline(time.Now()) // wake the reader to look at wdone
	}()
	r := c.r
	unit := r.size
	if r.depth == 0 {
		unit = streamChunk
	}
	var sent int64
	for i := int64(0); r.phase.Load() < phaseStop; i++ {
		if r.depth > 0 {
			for i-c.done.Load() >= r.depth {
				if !c.waitReader() {
					return
				}
			}
			if r.open && !c.waitTurn() {
				return
			}
			c.stamps[i%r.depth].Store(c.stamp())
		}
		for left := unit; left > 0; {
			for sent-c.acked.Load() >= r.window {
				if !c.waitReader() {
					return
				}
			}
			n := min(left, maxWindow, r.window)
			w, err := c.nc.Write(c.window(sent, n))
			sent += int64(w)
			c.sent.Store(sent)
			if err != nil {
				c.fail(err)
				return
			}
			left -= n
		}
	}
}

// waitReader waits for the reader to make progress; false when the run
// stopped or the connection died first.
func (c *conn) waitReader() bool {
	select {
	case <-c.wake:
		return true
	case <-c.r.stop:
	case <-c.dead:
	}
	return false
}

// runReader is the reading half of a split connection. It returns once
// the writer has stopped, every byte it wrote came back, and the tail is
// read (readTail).
func (c *conn) runReader() {
	defer c.exit()
	for {
		buf := c.buf
		if c.wdone.Load() {
			// The writer is done: sent is final, and a read takes
			// no more than is owed, so that what comes after the
			// last echo is the tail's to count.
			sent := c.sent.Load()
			owed := sent - c.recv
			if owed <= 0 {
				c.readTail(sent)
				return
			}
			buf = buf[:min(owed, int64(len(buf)))]
		}
		m, err := c.nc.Read(buf)
		if m > 0 {
			c.got(c.buf[:m])
			c.done.Store(c.msgs)
			c.acked.Store(c.recv)
			select {
			case c.wake <- struct{}{}:
			default: // a wake-up is pending already
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && c.wdone.Load() {
				// The writer's wake-up: wait on for what is owed,
				// with no deadline (Run's drain bounds it).
				c.nc.SetReadDeadline(time.Time{})
				continue
			}
			c.fail(err)
			return
		}
	}
}

// readTail ends a connection that is owed nothing more once its last
// byte (of sent in all) has gone: it sends our FIN (shutdown SHUT_WR) and
// reads to the server's. An echo server has nothing more to send, and
// answers the FIN with its own once it has echoed everything (netio's
// engines do), so the read ends at once on EOF; every byte that still
// comes is one the server sent after the last echo, counted in c.extra
// (with what a split reader took in past sent before it saw the writer
// stop: those bytes were checked as the start of a next message). A
// server that never sends its FIN keeps the read waiting until Run's
// drain runs out and closes the connection, which counts nothing: every
// byte came back, and TCP lets a peer keep its half open.
func (c *conn) readTail(sent int64) {
	if over := c.recv - sent; over > 0 {
		c.extra += over
	}
	// A split writer's wake-up may still be set (it sets the deadline
	// after wdone): reads here wait without one.
	c.nc.SetReadDeadline(time.Time{})
	if err := c.nc.CloseWrite(); err != nil {
		c.fail(fmt.Errorf("shutdown after the last echo: %w", err))
		return
	}
	buf := c.buf
	for {
		m, err := c.nc.Read(buf)
		if m > 0 {
			c.extra += int64(m)
			if len(buf) < tailBuf {
				buf = make([]byte, tailBuf)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			c.nc.SetReadDeadline(time.Time{})
		default:
			c.fail(fmt.Errorf("after the last echo: %w", err))
			return
		}
	}
}

// got checks b, the next bytes echoed, and completes the messages it
// ends. It returns how many messages it completed.
func (c *conn) got(b []byte) int64 {
	r := c.r
	size := r.size
	n := int64(len(b))
	if !c.gotEcho {
		c.gotEcho = true
		c.firstEcho.Store(metrics.Nanotime())
	}
	phase := r.phase.Load()
	measuring := phase == phaseMeasure
	if bytes.Equal(b, c.window(c.recv, n)) { // the fast path
		c.recv += n
		if measuring {
			c.okBytes += n
		}
		k := c.recv/size - c.msgs
		if k > 0 {
			c.complete(k, phase)
		}
		return k
	}
	// Some byte is wrong: go message by message to count the wrong
	// bytes and to know which messages they spoil.
	var k int64
	for len(b) > 0 {
		seg := min(int64(len(b)), size-c.recv%size)
		d := countDiff(b[:seg], c.window(c.recv, seg))
		if d > 0 {
			c.corruptAll += d
			c.curBad = true
		}
		if measuring {
			c.okBytes += seg - d
		}
		c.recv += seg
		b = b[seg:]
		if c.recv%size == 0 {
			c.complete(1, phase)
			k++
		}
	}
	return k
}

// complete counts k messages done in phase: the first one is the message
// that c.curBad is about; latencies go into the batch.
func (c *conn) complete(k int64, phase int32) {
	first := c.msgs
	bad := c.curBad
	c.msgs += k
	c.curBad = false
	if phase < phaseStop {
		c.msgsEnd = c.msgs
	}
	if phase != phaseMeasure {
		return
	}
	if bad {
		first++
		k--
	}
	c.reqs += k
	if c.r.timeline && k > 0 {
		c.shard.done.Add(k)
	}
	if c.stamps == nil || k == 0 {
		return
	}
	var now int64
	if c.r.open {
		now = metrics.Nanotime()
	} else {
		now = metrics.Ticks()
	}
	depth := c.r.depth
	for m := first; m < first+k; m++ {
		d := now - c.stamps[m%depth].Load()
		if !c.r.open {
			d = metrics.TicksToNs(d)
		}
		c.lat[c.nlat] = d
		if c.nlat++; c.nlat == latBatch {
			c.flushLat()
		}
	}
}

// flushLat moves the connection's latency batch into its shard.
func (c *conn) flushLat() {
	if c.nlat == 0 {
		return
	}
	c.shard.mu.Lock()
	for _, d := range c.lat[:c.nlat] {
		c.shard.h.Record(d)
	}
	c.shard.mu.Unlock()
	c.nlat = 0
}
