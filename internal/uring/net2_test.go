package uring

import (
	"bytes"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// A timer completes with -ETIME after its time, and a cancelled one with
// -ECANCELED at once.
func TestTimeout(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 8, Options{})
	requireOp(t, r, OpTimeout)
	ts := &Timespec{Nsec: 20e6}
	t0 := time.Now()
	r.GetSQE().PrepTimeout(ts, 0, 0, 1)
	c := reap(t, r, 1)
	if c[0].UserData != 1 || c[0].Res != -int32(syscall.ETIME) {
		t.Fatalf("timer: %+v, want -ETIME", c[0])
	}
	if d := time.Since(t0); d < 20*time.Millisecond {
		t.Errorf("a 20ms timer fired after %v", d)
	}
	long := &Timespec{Sec: 60}
	r.GetSQE().PrepTimeout(long, 0, 0, 2)
	r.GetSQE().PrepCancel(2, 0, 3)
	got := map[uint64]int32{}
	for _, c := range reap(t, r, 2) {
		got[c.UserData] = c.Res
	}
	if got[2] != -int32(syscall.ECANCELED) || got[3] != 0 {
		t.Errorf("cancelled timer: %v, want 2: -ECANCELED, 3: 0", got)
	}
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

// SubmitNoWait submits and runs a DEFER_TASKRUN ring's completion work
// without waiting, and makes no system call when there is nothing to do.
func TestSubmitNoWait(t *testing.T) {
	checkFds(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newTestRing(t, 8, Options{SingleIssuer: true, DeferTaskrun: true, TaskrunFlag: true})
	before := r.Syscalls()
	if n, err := r.SubmitNoWait(); n != 0 || err != nil {
		t.Fatalf("SubmitNoWait with nothing to do: %d, %v", n, err)
	}
	if r.Syscalls() != before {
		t.Error("SubmitNoWait made a system call with nothing to do")
	}
	r.GetSQE().PrepNop(1)
	r.GetSQE().PrepNop(2)
	if n, err := r.SubmitNoWait(); n != 2 || err != nil {
		t.Fatalf("SubmitNoWait: %d, %v; want 2 consumed", n, err)
	}
	if got := r.CQReady(); got != 2 {
		t.Fatalf("%d CQEs ready after SubmitNoWait, want 2", got)
	}
	r.Advance(2)
	// A pipe read completes through task work when data arrives: with
	// DEFER_TASKRUN it runs at the next io_uring_enter that gets events,
	// here SubmitNoWait, which does not wait for it.
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	buf, err := sys.MmapAnon(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(buf)
	r.GetSQE().PrepRead(int32(p[0]), buf, NoOffset, 3)
	if _, err := r.SubmitNoWait(); err != nil {
		t.Fatal(err)
	}
	if r.CQReady() != 0 {
		t.Fatal("a read of an empty pipe completed")
	}
	syscall.Write(p[1], []byte("x"))
	for range 1000 {
		if _, err := r.SubmitNoWait(); err != nil {
			t.Fatal(err)
		}
		if r.CQReady() > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c := reap(t, r, 1)[0]
	if c.UserData != 3 || c.Res != 1 {
		t.Fatalf("read: %+v, want 1 byte", c)
	}
}
