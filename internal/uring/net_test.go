package uring

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// requireOp skips when the kernel lacks op (the probe, not a guess).
func requireOp(t *testing.T, r *Ring, ops ...Op) {
	t.Helper()
	set, err := r.Probe()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if !set.Has(op) {
			t.Skipf("kernel lacks IORING_OP_%s", op)
		}
	}
}

// tcpPair returns a connected loopback pair: a raw non-blocking server
// fd the ring uses, and the client as a net.Conn.
func tcpPair(t *testing.T) (int, *net.TCPConn) {
	t.Helper()
	lfd, ap, err := sys.ListenTCP(mustAddr(t), false, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(lfd)
	c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(ap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var fd int
	for range 1000 {
		fd, err = sys.Accept4(lfd)
		if err != sys.EAGAIN {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(fd) })
	return fd, c
}

func TestAcceptMultishot(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpAccept)
	lfd, ap, err := sys.ListenTCP(mustAddr(t), false, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(lfd)
	r.GetSQE().PrepAccept(int32(lfd), sys.SOCK_NONBLOCK|sys.SOCK_CLOEXEC, true, 7)
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(ap))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cqe := reapOne(t, r)
		if cqe.UserData != 7 || cqe.Res < 0 || !cqe.More() {
			t.Fatalf("accept %d: %+v, want an fd with F_MORE", i, cqe)
		}
		sys.Close(int(cqe.Res))
	}
	r.GetSQE().PrepCancel(7, 0, 8)
	cqes := reap(t, r, 2)
	for _, c := range cqes {
		if c.UserData == 7 && (c.Res != -int32(syscall.ECANCELED) || c.More()) {
			t.Errorf("cancelled accept: %+v", c)
		}
	}
}

func TestRecvMultishotBufRing(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpRecv)
	br, err := r.RegisterBufRing(3, 4, 1024)
	if err != nil {
		t.Skipf("buffer rings: %v", err)
	}
	defer br.Close()
	fd, c := tcpPair(t)
	r.GetSQE().PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	// 10 KiB into four 1 KiB buffers, recycled as they come: the bytes
	// arrive whole and in order, across several buffers.
	want := make([]byte, 10<<10)
	for i := range want {
		want[i] = byte(i * 7)
	}
	c.Write(want)
	var got []byte
	rearms := 0
	for len(got) < len(want) {
		cqe := reapOne(t, r)
		if cqe.Res == -int32(syscall.ENOBUFS) {
			// The group ran dry before we recycled: re-arm.
			rearms++
			r.GetSQE().PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
			r.Submit()
			continue
		}
		if cqe.Res <= 0 || cqe.Flags&CQEFBuffer == 0 {
			t.Fatalf("recv: %+v", cqe)
		}
		got = append(got, br.Buf(cqe.BufferID())[:cqe.Res]...)
		br.Recycle(cqe.BufferID())
		br.Publish()
		if !cqe.More() {
			rearms++
			r.GetSQE().PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
			r.Submit()
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("received bytes differ")
	}
	t.Logf("%d re-arms", rearms)
	// Stop recycling: more data than the group holds ends the multishot
	// with ENOBUFS.
	go c.Write(make([]byte, 64<<10))
	held := 0
	for {
		cqe := reapOne(t, r)
		if cqe.Res == -int32(syscall.ENOBUFS) {
			break
		}
		if cqe.Res <= 0 {
			t.Fatalf("recv: %+v", cqe)
		}
		held++
		if held > 4 {
			t.Fatalf("%d buffers handed out from a group of 4", held)
		}
		if !cqe.More() {
			r.GetSQE().PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
			r.Submit()
		}
	}
	// The peer's close ends a multishot with Res 0 and no F_MORE.
	for i := range uint16(4) {
		br.Recycle(i)
	}
	br.Publish()
	c.Close()
	r.GetSQE().PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
	r.Submit()
	for {
		cqe := reapOne(t, r)
		if cqe.Res > 0 || cqe.Res == -int32(syscall.ENOBUFS) {
			if cqe.Res > 0 {
				br.Recycle(cqe.BufferID())
				br.Publish()
			}
			if !cqe.More() {
				r.GetSQE().PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
				r.Submit()
			}
			continue
		}
		if cqe.Res != 0 || cqe.More() {
			t.Fatalf("after the peer's close: %+v, want Res 0 without F_MORE", cqe)
		}
		break
	}
}

func TestSendAndSendmsg(t *testing.T) {
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpSend, OpSendmsg)
	fd, c := tcpPair(t)
	msg := []byte("hello, ")
	r.GetSQE().PrepSend(int32(fd), msg, sys.MSG_NOSIGNAL, 1)
	parts := [][]byte{[]byte("wor"), []byte("ld"), []byte("!")}
	iov := make([]sys.Iovec, len(parts))
	for i, p := range parts {
		iov[i].Base = &p[0]
		iov[i].SetLen(len(p))
	}
	var mh sys.Msghdr
	mh.Iov = &iov[0]
	mh.SetIovlen(len(iov))
	r.GetSQE().PrepSendmsg(int32(fd), &mh, sys.MSG_NOSIGNAL, 2)
	for _, cqe := range reap(t, r, 2) {
		if cqe.Res <= 0 {
			t.Fatalf("send %d: %+v", cqe.UserData, cqe)
		}
	}
	got := make([]byte, 13)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello, world!" {
		t.Fatalf("got %q", got)
	}
}

func TestSpliceFileToSocket(t *testing.T) {
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpSplice)
	path, data := testFile(t, 256<<10)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	fd, c := tcpPair(t)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(c, int64(len(data))))
		got <- b
	}()
	const chunk = 64 << 10
	for off := 0; off < len(data); off += chunk {
		sqe := r.GetSQE()
		sqe.PrepSplice(int32(f.Fd()), uint64(off), int32(pw.Fd()), NoOffset, chunk, 0, 1)
		sqe.SetFlags(SQEIOLink)
		r.GetSQE().PrepSplice(int32(pr.Fd()), NoOffset, int32(fd), NoOffset, chunk, 0, 2)
		for _, cqe := range reap(t, r, 2) {
			if cqe.Res != chunk {
				t.Fatalf("splice %d at %d: %+v", cqe.UserData, off, cqe)
			}
		}
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("spliced %d bytes differ", len(b))
	}
}

func TestBufRingErrors(t *testing.T) {
	r := newTestRing(t, 4, Options{})
	for _, c := range []struct{ entries, size int }{{3, 64}, {0, 64}, {1 << 16, 64}, {4, 0}} {
		if br, err := r.RegisterBufRing(1, c.entries, c.size); err == nil {
			br.Close()
			t.Errorf("RegisterBufRing(%d, %d) succeeded", c.entries, c.size)
		}
	}
	br, err := r.RegisterBufRing(1, 4, 64)
	if err != nil {
		t.Skipf("buffer rings: %v", err)
	}
	if _, err := r.RegisterBufRing(1, 4, 64); err == nil {
		t.Error("a second ring for group 1 succeeded")
	}
	if err := br.Close(); err != nil {
		t.Error(err)
	}
	if err := br.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func mustAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	return netip.MustParseAddrPort("127.0.0.1:0")
}

// reapOne takes exactly one completion, leaving the rest in the CQ.
func reapOne(t *testing.T, r *Ring) CQE {
	t.Helper()
	if r.CQReady() == 0 {
		if _, err := r.SubmitAndWait(1); err != nil {
			t.Fatal(err)
		}
	}
	var c [1]CQE
	r.PeekBatch(c[:])
	r.Advance(1)
	return c[0]
}

// A multishot recv with a per-receive size and a limit takes receives of
// at most that size and ends with the one that reaches the limit (its
// last CQE lacks CQEFMore), so it never takes limit+size bytes or more;
// re-armed, it takes the rest, in order.
func TestRecvLimit(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpRecv)
	br, err := r.RegisterBufRing(5, 16, 1024)
	if err != nil {
		t.Skipf("buffer rings: %v", err)
	}
	defer br.Close()
	fd, c := tcpPair(t)
	want := make([]byte, 10_000)
	for i := range want {
		want[i] = byte(i*13 + i>>8)
	}
	if _, err := c.Write(want); err != nil {
		t.Fatal(err)
	}
	const limit, size = 2500, 700
	arm := func() {
		sqe := r.GetSQE()
		sqe.PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
		sqe.SetRecvLen(size)
		sqe.SetRecvLimit(limit)
	}
	arm()
	var got []byte
	sinceArm := 0
	arms := 1
	for len(got) < len(want) {
		cqe := reapOne(t, r)
		if cqe.Res == -int32(syscall.EINVAL) && len(got) == 0 {
			t.Skip("kernel lacks the multishot recv caps (sqe->len and sqe->optlen, Linux 6.16)")
		}
		if cqe.Res <= 0 || cqe.Res > size {
			t.Fatalf("recv: %+v after %d bytes, want 1 to %d bytes", cqe, len(got), size)
		}
		got = append(got, br.Buf(cqe.BufferID())[:cqe.Res]...)
		br.Recycle(cqe.BufferID())
		br.Publish()
		sinceArm += int(cqe.Res)
		if sinceArm >= limit+size {
			t.Fatalf("%d bytes since the last arm, limit %d, receive size %d", sinceArm, limit, size)
		}
		if !cqe.More() {
			if sinceArm < limit && len(got) < len(want) {
				t.Fatalf("multishot ended after %d bytes, limit %d", sinceArm, limit)
			}
			sinceArm = 0
			if len(got) < len(want) {
				arm()
				arms++
			}
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("received bytes differ")
	}
	// The last arm is still waiting: end it before its buffers go.
	r.GetSQE().PrepCancel(1, 0, 2)
	for _, cqe := range reap(t, r, 2) {
		if cqe.UserData == 1 && (cqe.Res != -int32(syscall.ECANCELED) || cqe.More()) {
			t.Errorf("cancelled recv: %+v", cqe)
		}
	}
	// 700-byte receives reach 2500 at 2800: 10,000 bytes take 4 arms.
	if arms != 4 {
		t.Errorf("%d arms for %d bytes, want 4", arms, len(want))
	}
}

// A single recv with buffer select takes one buffer and at most the
// length asked, says when more data waits, and with POLL_FIRST waits for
// data that comes later.
func TestRecvSelect(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpRecv)
	br, err := r.RegisterBufRing(6, 4, 1024)
	if err != nil {
		t.Skipf("buffer rings: %v", err)
	}
	defer br.Close()
	fd, c := tcpPair(t)
	want := make([]byte, 3000)
	for i := range want {
		want[i] = byte(i * 7)
	}
	c.Write(want)
	var got []byte
	for len(got) < len(want) {
		r.GetSQE().PrepRecvSelect(int32(fd), br.Group(), 700, 0, 1)
		cqe := reap(t, r, 1)[0]
		if cqe.Res <= 0 || cqe.Res > 700 || cqe.Flags&CQEFBuffer == 0 || cqe.More() {
			t.Fatalf("recv: %+v, want 1 to 700 bytes in one buffer", cqe)
		}
		got = append(got, br.Buf(cqe.BufferID())[:cqe.Res]...)
		br.Recycle(cqe.BufferID())
		br.Publish()
		if nonempty := cqe.Flags&CQEFSockNonempty != 0; nonempty != (len(got) < len(want)) {
			t.Errorf("after %d of %d bytes: SOCK_NONEMPTY %v", len(got), len(want), nonempty)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("received bytes differ")
	}
	sqe := r.GetSQE()
	sqe.PrepRecvSelect(int32(fd), br.Group(), 0, 0, 2)
	sqe.IOPrio |= RecvsendPollFirst
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if r.CQReady() != 0 {
		t.Fatal("a recv of an empty socket completed")
	}
	c.Write([]byte("late"))
	cqe := reap(t, r, 1)[0]
	if cqe.Res != 4 || string(br.Buf(cqe.BufferID())[:4]) != "late" {
		t.Fatalf("recv after POLL_FIRST: %+v", cqe)
	}
}

// A multishot bundle recv fills several buffers with one receive; the
// run of buffers is found from the first one's position in the ring.
func TestRecvBundle(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpRecv)
	const n, size = 16, 1024
	br, err := r.RegisterBufRing(7, n, size)
	if err != nil {
		t.Skipf("buffer rings: %v", err)
	}
	defer br.Close()
	// RegisterBufRing put buffer i at position i.
	var at [1 << 16]uint16
	pos := make([]uint16, n)
	for i := range uint16(n) {
		at[i], pos[i] = i, i
	}
	fd, c := tcpPair(t)
	want := make([]byte, 10_000)
	for i := range want {
		want[i] = byte(i*31 + i>>9)
	}
	if _, err := c.Write(want); err != nil {
		t.Fatal(err)
	}
	sqe := r.GetSQE()
	sqe.PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
	sqe.IOPrio |= RecvsendBundle
	sqe.SetRecvLen(3000)
	var got []byte
	bundles := 0
	for len(got) < len(want) {
		cqe := reapOne(t, r)
		if cqe.Res == -int32(syscall.EINVAL) && len(got) == 0 {
			t.Skip("kernel lacks recv bundles (Linux 6.10)")
		}
		if cqe.Res <= 0 || cqe.Res > 3000 || cqe.Flags&CQEFBuffer == 0 || !cqe.More() {
			t.Fatalf("recv: %+v after %d bytes", cqe, len(got))
		}
		p := pos[cqe.BufferID()]
		k := (int(cqe.Res) + size - 1) / size
		if k > 1 {
			bundles++
		}
		for j := range k {
			id := at[p+uint16(j)]
			m := min(size, int(cqe.Res)-j*size)
			got = append(got, br.Buf(id)[:m]...)
			q := br.Position()
			br.Recycle(id)
			at[q], pos[id] = id, q
		}
		br.Publish()
	}
	if !bytes.Equal(got, want) {
		t.Fatal("received bytes differ")
	}
	if bundles == 0 {
		t.Error("no receive filled more than one buffer")
	}
	r.GetSQE().PrepCancel(1, 0, 2)
	for _, cqe := range reap(t, r, 2) {
		if cqe.UserData == 1 && (cqe.Res != -int32(syscall.ECANCELED) || cqe.More()) {
			t.Errorf("cancelled recv: %+v", cqe)
		}
	}
}

// With RecvsendBundle, the limit cuts each receive to what is left of it:
// the request takes the limit exactly, however large its receives.
func TestRecvBundleLimit(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpRecv)
	br, err := r.RegisterBufRing(8, 16, 128)
	if err != nil {
		t.Skipf("buffer rings: %v", err)
	}
	defer br.Close()
	fd, c := tcpPair(t)
	if _, err := c.Write(make([]byte, 1500)); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []uint32{1, 100, 500} {
		sqe := r.GetSQE()
		sqe.PrepRecvMultishot(int32(fd), br.Group(), 0, 1)
		sqe.IOPrio |= RecvsendBundle
		sqe.SetRecvLen(1024)
		sqe.SetRecvLimit(limit)
		got := uint32(0)
		for {
			cqe := reapOne(t, r)
			if cqe.Res == -int32(syscall.EINVAL) {
				t.Skip("kernel lacks recv bundles or the multishot recv caps (Linux 6.16)")
			}
			if cqe.Res <= 0 {
				t.Fatalf("limit %d: %+v", limit, cqe)
			}
			got += uint32(cqe.Res)
			// Give the buffers back: they are the next ones in the ring.
			for k := range (int(cqe.Res) + 127) / 128 {
				br.Recycle((cqe.BufferID() + uint16(k)) % 16)
			}
			br.Publish()
			if !cqe.More() {
				break
			}
		}
		if got != limit {
			t.Errorf("limit %d: the request took %d bytes", limit, got)
		}
	}
}

// An empty buffer ring gives a recv nothing (ENOBUFS) until the caller
// hands buffers over, which the kernel then takes in the order given.
func TestRegisterBufRingEmpty(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 16, Options{})
	requireOp(t, r, OpRecv)
	br, err := r.RegisterBufRingEmpty(9, 8, 64)
	if err != nil {
		t.Skipf("buffer rings: %v", err)
	}
	defer br.Close()
	fd, c := tcpPair(t)
	if _, err := c.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	r.GetSQE().PrepRecvSelect(int32(fd), br.Group(), 0, 0, 1)
	if cqe := reap(t, r, 1)[0]; cqe.Res != -int32(syscall.ENOBUFS) {
		t.Fatalf("recv from an empty ring: %+v, want -ENOBUFS", cqe)
	}
	if p := br.Position(); p != 0 {
		t.Fatalf("position %d, want 0", p)
	}
	br.Recycle(5)
	br.Recycle(2)
	br.Publish()
	if p := br.Position(); p != 2 {
		t.Fatalf("position %d after two, want 2", p)
	}
	for _, want := range []uint16{5, 2} {
		r.GetSQE().PrepRecvSelect(int32(fd), br.Group(), 4, 0, 1)
		cqe := reap(t, r, 1)[0]
		if cqe.Res != 4 || cqe.BufferID() != want {
			t.Fatalf("recv: %+v (buffer %d), want 4 bytes in buffer %d", cqe, cqe.BufferID(), want)
		}
	}
}
