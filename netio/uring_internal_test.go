package netio

import (
	"runtime"
	"testing"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/uring"
)

// handLoop sets up a loop to drive by hand, on the test's locked thread,
// without a listener: 8 provided buffers of bufSize bytes, all given to
// the kernel, and the RECV limits on.
func handLoop(t *testing.T, bufSize int) *uloop {
	t.Helper()
	if r := features.Probe(); !r.IOURing.Available {
		t.Skipf("io_uring unavailable here: %s", r.IOURing.Reason)
	}
	if err := uringSupported(); err != nil {
		t.Skip(err)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	cfg, _, err := Config{Loops: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := &uringServer{}
	s.cfg = cfg
	l := newUloop(s, 0, -1, -1, uringParams{bufEntries: 8, bufSize: bufSize}, true)
	if err := l.setup(); err != nil {
		l.teardown()
		t.Fatal(err)
	}
	t.Cleanup(l.teardown)
	l.refill()
	return l
}

// TestUringStaleCQE: a CQE whose generation is not its slot's (the slot
// was freed, and maybe reused) is dropped, and the buffer it carries goes
// back to the ring; the same CQE with the slot's generation is taken.
// The loop is driven by hand here, without a listener or requests.
func TestUringStaleCQE(t *testing.T) {
	l := handLoop(t, 256) // the kernel has its 8 buffers
	// A connection in slot 0 whose slot was freed twice before (gen 2).
	l.conns = append(l.conns, uconn{fd: 99, gen: 2, head: -1, tail: -1, iov: -1, state: ucOpen, recv: true, inflight: 1})
	l.nconns = 1
	c := &l.conns[0]
	recv := func(gen uint32, bid uint16, n int32) *uring.CQE {
		return &uring.CQE{
			UserData: udata(uopRecv, 0, gen),
			Res:      n,
			Flags:    uring.CQEFBuffer | uring.CQEFMore | uint32(bid)<<uring.CQEBufferShift,
		}
	}
	l.handle(recv(1, 3, 100))
	if got := l.stale.Load(); got != 1 {
		t.Fatalf("stale CQEs %d, want 1", got)
	}
	if c.head != -1 || c.held != 0 || l.passIn != 0 {
		t.Errorf("a stale CQE reached the connection: head %d held %d, %d bytes counted", c.head, c.held, l.passIn)
	}
	if l.outstanding != 0 || l.inRing != 7 || len(l.freeBufs) != 1 || l.freeBufs[0] != 3 {
		t.Errorf("stale CQE's buffer 3: outstanding %d, %d in the ring, free %v; want 0, 7, [3]", l.outstanding, l.inRing, l.freeBufs)
	}
	// A CQE for a slot past the table, and one with an unknown tag.
	l.handle(&uring.CQE{UserData: udata(uopSend, 7, 0), Res: 5})
	l.handle(&uring.CQE{UserData: uint64(0xee) << 56, Res: 5})
	if got := l.stale.Load(); got != 3 {
		t.Fatalf("stale CQEs %d, want 3", got)
	}
	// The generation wraps within its 24 bits, as udata packs it.
	if got := udata(uopRecv, 5, genMask+1+2); got != udata(uopRecv, 5, 2) {
		t.Errorf("udata does not wrap the generation: %#x", got)
	}
	// The current generation is taken: the bytes are queued, and sent at
	// the end of the pass.
	l.handle(recv(2, 4, 100))
	l.endPass()
	if c.head != 4 || c.held != 100 || l.st.bytesIn.Load() != 100 || !c.sending {
		t.Errorf("a current CQE was not taken: head %d held %d, %d bytes counted, sending %v", c.head, c.held, l.st.bytesIn.Load(), c.sending)
	}
}

// TestUringRecvSize: a connection's RECV asks for one buffer until a
// receive fills one, for the full length from then on, and for one
// buffer again after uringSmallRun small receives in a row. Kernels
// without the RECV limits always take one buffer per RECV.
func TestUringRecvSize(t *testing.T) {
	const bufSize = 4096
	l := &uloop{p: uringParams{bufEntries: 64, bufSize: bufSize}, recvLimit: true, recvLen: 32 * bufSize}
	c := &uconn{}
	want := func(step string, n int32) {
		t.Helper()
		if got := l.recvSize(c); got != n {
			t.Fatalf("%s: RECV of %d bytes, want %d", step, got, n)
		}
	}
	want("a new connection", bufSize)
	c.noteRecv(64, bufSize)
	c.noteRecv(bufSize-1, bufSize)
	want("after small receives", bufSize)
	c.noteRecv(0, bufSize) // EOF
	c.noteRecv(-104, bufSize)
	want("after an EOF and an error", bufSize)
	c.noteRecv(bufSize, bufSize)
	want("after a receive that filled a buffer", 32*bufSize)
	for range uringSmallRun - 1 {
		c.noteRecv(64, bufSize)
	}
	c.noteRecv(-105, bufSize) // errors and EOFs do not count
	c.noteRecv(0, bufSize)
	want("after one small receive too few", 32*bufSize)
	c.noteRecv(3*bufSize, bufSize) // a large one starts the run again
	for range uringSmallRun - 1 {
		c.noteRecv(64, bufSize)
	}
	want("after a large receive ended the run", 32*bufSize)
	c.noteRecv(64, bufSize)
	want("after uringSmallRun small receives in a row", bufSize)

	l.recvLimit, l.recvLen = false, bufSize
	c.noteRecv(bufSize, bufSize)
	want("without the RECV limits", bufSize)
}

// TestUringRecvUpgrade: a RECV armed for one buffer that fills it is
// cancelled at once, so that the connection's next RECV asks for the full
// length; one that receives less goes on. The loop is driven by hand.
func TestUringRecvUpgrade(t *testing.T) {
	const bufSize = 256
	l := handLoop(t, bufSize)
	l.conns = append(l.conns, uconn{fd: 99, head: -1, tail: -1, iov: -1, state: ucOpen, recv: true, recvSmall: true, inflight: 1})
	l.nconns = 1
	c := &l.conns[0]
	recv := func(bid uint16, n int32) *uring.CQE {
		return &uring.CQE{
			UserData: udata(uopRecv, 0, 0),
			Res:      n,
			Flags:    uring.CQEFBuffer | uring.CQEFMore | uint32(bid)<<uring.CQEBufferShift,
		}
	}
	l.handle(recv(0, 64))
	if c.large || c.recvCancel {
		t.Fatalf("after 64 bytes: large %v, RECV cancelled %v; want neither", c.large, c.recvCancel)
	}
	l.handle(recv(1, bufSize))
	if !c.large || !c.recvCancel {
		t.Fatalf("after a full buffer: large %v, RECV cancelled %v; want both", c.large, c.recvCancel)
	}
	if got, want := l.recvSize(c), int32(l.recvLen); got != want || want <= bufSize {
		t.Errorf("the next RECV asks for %d bytes, want the full length %d (> %d)", got, want, bufSize)
	}
}
