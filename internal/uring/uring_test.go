package uring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	seccomptest.Install()
	goleak.VerifyTestMain(m)
}

// requireRing skips only when io_uring_setup says io_uring is not usable by
// this process (not in the kernel, forbidden, or no memory for a ring).
func requireRing(t testing.TB) {
	t.Helper()
	err := TrySetup(4, 0)
	switch {
	case err == nil:
	case errors.Is(err, sys.ENOSYS):
		t.Skip("io_uring not supported: io_uring_setup returned ENOSYS (kernel without io_uring)")
	case errors.Is(err, sys.EPERM):
		t.Skip("io_uring not supported: io_uring_setup returned EPERM (io_uring_disabled sysctl or seccomp)")
	case errors.Is(err, sys.ENOMEM):
		t.Skip("io_uring not supported: io_uring_setup returned ENOMEM (RLIMIT_MEMLOCK too low)")
	default:
		t.Fatalf("io_uring_setup: %v", err)
	}
}

// checkFds fails the test if it leaks file descriptors.
func checkFds(t *testing.T) {
	before := testenv.OpenFDs(t)
	t.Cleanup(func() {
		if after := testenv.OpenFDs(t); after != before {
			t.Errorf("fd count %d before, %d after: leaked descriptors", before, after)
		}
	})
}

func TestABISizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_params", unsafe.Sizeof(Params{}), 120},
		{"io_sqring_offsets", unsafe.Sizeof(SQOffsets{}), 40},
		{"io_cqring_offsets", unsafe.Sizeof(CQOffsets{}), 40},
		{"io_uring_sqe", unsafe.Sizeof(SQE{}), 64},
		{"io_uring_cqe", unsafe.Sizeof(CQE{}), 16},
		{"io_uring_rsrc_register", unsafe.Sizeof(rsrcRegister{}), 32},
		{"io_uring_files_update", unsafe.Sizeof(filesUpdate{}), 16},
		{"io_uring_probe", unsafe.Sizeof(probeHeader{}), 16},
		{"io_uring_probe_op", unsafe.Sizeof(probeOp{}), 8},
		{"io_uring_buf_reg", unsafe.Sizeof(bufReg{}), 40},
		{"io_uring_buf", unsafe.Sizeof(bufEntry{}), 16},
	} {
		if c.got != c.want {
			t.Errorf("sizeof(%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
	var s SQE
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"fd", unsafe.Offsetof(s.Fd), 4},
		{"off", unsafe.Offsetof(s.Off), 8},
		{"addr", unsafe.Offsetof(s.Addr), 16},
		{"len", unsafe.Offsetof(s.Len), 24},
		{"rw_flags", unsafe.Offsetof(s.OpFlags), 28},
		{"user_data", unsafe.Offsetof(s.UserData), 32},
		{"buf_index", unsafe.Offsetof(s.BufIndex), 40},
		{"file_index", unsafe.Offsetof(s.FileIndex), 44},
		{"addr3", unsafe.Offsetof(s.Addr3), 48},
	} {
		if c.got != c.want {
			t.Errorf("offsetof(sqe.%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func newTestRing(t testing.TB, entries uint32, opts Options) *Ring {
	t.Helper()
	requireRing(t)
	r, err := New(entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func reap(t *testing.T, r *Ring, n int) []CQE {
	t.Helper()
	var out []CQE
	buf := make([]CQE, 16)
	for len(out) < n {
		if r.CQReady() == 0 {
			if _, err := r.SubmitAndWait(1); err != nil {
				t.Fatal(err)
			}
		}
		k := r.PeekBatch(buf)
		out = append(out, buf[:k]...)
		r.Advance(k)
	}
	return out
}

func TestNop(t *testing.T) {
	checkFds(t)
	for _, opts := range []Options{
		{},
		{SingleIssuer: true, DeferTaskrun: true, CoopTaskrun: true, TaskrunFlag: true, SubmitAll: true, NoSQArray: true},
	} {
		runtime.LockOSThread()
		r := newTestRing(t, 8, opts)
		const n = 20 // more than the SQ holds: exercises a full SQ
		got := map[uint64]bool{}
		sent := 0
		for sent < n || len(got) < n {
			for sent < n {
				sqe := r.GetSQE()
				if sqe == nil {
					break
				}
				sqe.PrepNop(uint64(1000 + sent))
				sent++
			}
			if _, err := r.SubmitAndWait(1); err != nil {
				t.Fatal(err)
			}
			r.ForEachCQE(func(c *CQE) {
				if c.Res != 0 {
					t.Errorf("nop res %d", c.Res)
				}
				got[c.UserData] = true
			})
		}
		for i := range n {
			if !got[uint64(1000+i)] {
				t.Errorf("no completion for user_data %d", 1000+i)
			}
		}
		r.Close()
		runtime.UnlockOSThread()
	}
}

// testFile writes size pseudo-random bytes to a temp file.
func testFile(t *testing.T, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	x := uint32(12345)
	for i := range data {
		x = x*1664525 + 1013904223
		data[i] = byte(x >> 24)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestReads(t *testing.T) {
	checkFds(t)
	path, data := testFile(t, 3*4096+100)
	r := newTestRing(t, 8, Options{})
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)

	mem, err := sys.MmapAnon(4 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(mem)
	bufs := [][]byte{mem[:4096], mem[4096:8192], mem[8192:12288], mem[12288:]}
	if err := r.RegisterBuffers(bufs[:2]); err != nil {
		t.Fatal(err)
	}
	iovMem, err := sys.MmapAnon(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(iovMem)
	iov := unsafe.Slice((*sys.Iovec)(unsafe.Pointer(&iovMem[0])), 2)
	iov[0].Base = &bufs[2][0]
	iov[0].SetLen(1000)
	iov[1].Base = &bufs[3][0]
	iov[1].SetLen(4096)

	r.GetSQE().PrepRead(int32(fd), bufs[0][:4096], 4096, 1)
	r.GetSQE().PrepReadFixed(int32(fd), bufs[1][10:4096], 3*4096, 1, 2) // short: 100 bytes left
	r.GetSQE().PrepReadv(int32(fd), iov, 5, 3)
	cqes := reap(t, r, 3)
	want := map[uint64]int32{1: 4096, 2: 100, 3: 5096}
	for _, c := range cqes {
		if c.Res != want[c.UserData] {
			t.Errorf("user_data %d: res %d, want %d", c.UserData, c.Res, want[c.UserData])
		}
	}
	if !bytes.Equal(bufs[0], data[4096:8192]) {
		t.Error("READ bytes differ from the file")
	}
	if !bytes.Equal(bufs[1][10:110], data[3*4096:]) {
		t.Error("READ_FIXED bytes differ from the file")
	}
	if !bytes.Equal(bufs[2][:1000], data[5:1005]) || !bytes.Equal(bufs[3], data[1005:1005+4096]) {
		t.Error("READV bytes differ from the file")
	}
	// Compare with pread too, the reference path.
	ref := make([]byte, 4096)
	if _, err := sys.Pread(fd, ref, 4096); err != nil || !bytes.Equal(ref, bufs[0]) {
		t.Errorf("pread differs from READ (err %v)", err)
	}
}

func TestChainOpenStatxReadClose(t *testing.T) {
	checkFds(t)
	path, data := testFile(t, 5000)
	r := newTestRing(t, 8, Options{})
	if err := r.RegisterFilesSparse(4); err != nil {
		t.Fatal(err)
	}
	// Off-heap memory for the path, statx and data, as the contract says.
	mem, err := sys.MmapAnon(3 * 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(mem)
	pathb := mem[:4096]
	copy(pathb, path)
	pathb[len(path)] = 0
	st := (*sys.Statx_t)(unsafe.Pointer(&mem[4096]))
	buf := mem[8192:]

	const slot = 2
	s := r.GetSQE()
	s.PrepOpenatDirect(sys.AT_FDCWD, &pathb[0], sys.O_RDONLY, 0, slot, 1)
	s.SetFlags(SQEIOHardlink)
	s = r.GetSQE()
	s.PrepStatx(sys.AT_FDCWD, &pathb[0], 0, sys.STATX_SIZE, st, 2)
	s.SetFlags(SQEIOHardlink)
	s = r.GetSQE()
	s.PrepRead(slot, buf[:8192], 0, 3)
	s.SetFlags(SQEFixedFile | SQEIOHardlink)
	r.GetSQE().PrepCloseDirect(slot, 4)
	cqes := reap(t, r, 4)
	res := map[uint64]int32{}
	for _, c := range cqes {
		res[c.UserData] = c.Res
	}
	if want := (map[uint64]int32{1: 0, 2: 0, 3: 5000, 4: 0}); !mapsEqual(res, want) {
		t.Fatalf("results %v, want %v", res, want)
	}
	if st.Size != 5000 {
		t.Errorf("statx size %d, want 5000", st.Size)
	}
	if !bytes.Equal(buf[:5000], data) {
		t.Error("bytes read through the direct slot differ from the file")
	}
	// The slot is empty again: reading it fails with EBADF.
	s = r.GetSQE()
	s.PrepRead(slot, buf[:10], 0, 5)
	s.SetFlags(SQEFixedFile)
	if c := reap(t, r, 1)[0]; c.Res != -int32(sys.EBADF) {
		t.Errorf("read of a closed slot: res %d, want -EBADF", c.Res)
	}
	// UpdateFiles fills a slot with a normal fd.
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	if err := r.UpdateFiles(0, []int32{int32(fd)}); err != nil {
		t.Fatal(err)
	}
	s = r.GetSQE()
	s.PrepRead(0, buf[:10], 4990, 6)
	s.SetFlags(SQEFixedFile)
	if c := reap(t, r, 1)[0]; c.Res != 10 || !bytes.Equal(buf[:10], data[4990:]) {
		t.Errorf("read of an updated slot: res %d", c.Res)
	}
	if err := r.UpdateFiles(0, []int32{-1}); err != nil {
		t.Fatal(err)
	}
}

func mapsEqual(a, b map[uint64]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestProbe(t *testing.T) {
	r := newTestRing(t, 4, Options{})
	ops, err := r.Probe()
	if err != nil {
		t.Fatal(err)
	}
	list := ops.List()
	for _, op := range []Op{OpNop, OpRead, OpReadv, OpReadFixed, OpOpenat, OpStatx, OpClose} {
		if !ops.Has(op) || !slices.Contains(list, op) {
			t.Errorf("probe does not list %v (supported: %v)", op, list)
		}
	}
	if OpReadFixed.String() != "READ_FIXED" || Op(250).String() != "OP_250" {
		t.Errorf("op names: %v %v", OpReadFixed, Op(250))
	}
}

func TestStepDown(t *testing.T) {
	// refuse returns EINVAL while any flag in bad is set.
	refuse := func(bad uint32, calls *[]uint32) setupFunc {
		return func(entries uint32, p *Params) (int, error) {
			*calls = append(*calls, p.Flags)
			if p.Flags&bad != 0 {
				return -1, sys.EINVAL
			}
			return 99, nil
		}
	}
	all := Options{SubmitAll: true, CoopTaskrun: true, TaskrunFlag: true, SingleIssuer: true, DeferTaskrun: true, NoSQArray: true}
	for _, c := range []struct {
		name    string
		opts    Options
		bad     uint32
		dropped []string
		wantErr bool
	}{
		{"nothing refused", all, 0, nil, false},
		{"no NO_SQARRAY", all, SetupNoSQArray, []string{"NO_SQARRAY"}, false},
		// Flags dropped on the way down but not to blame are put back.
		{"no DEFER_TASKRUN", all, SetupDeferTaskrun, []string{"DEFER_TASKRUN"}, false},
		{"no SINGLE_ISSUER", all, SetupSingleIssuer, []string{"DEFER_TASKRUN", "SINGLE_ISSUER"}, false},
		{"no COOP_TASKRUN", all, SetupCoopTaskrun, []string{"COOP_TASKRUN"}, false},
		{"SQPOLL refused is an error", Options{SQPoll: true, SubmitAll: true}, SetupSQPoll, []string{"SUBMIT_ALL"}, true},
		{"strict", Options{SubmitAll: true, Strict: true}, SetupSubmitAll, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []uint32
			var closed []int
			p, fd, dropped, err := setupStepDown(8, c.opts, refuse(c.bad, &calls), func(fd int) { closed = append(closed, fd) })
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v (calls %v)", err, c.wantErr, calls)
			}
			if !slices.Equal(dropped, c.dropped) {
				t.Errorf("dropped %v, want %v", dropped, c.dropped)
			}
			if err != nil {
				var se *SetupError
				if !errors.As(err, &se) || !errors.Is(err, sys.EINVAL) {
					t.Errorf("error %v is not a *SetupError wrapping EINVAL", err)
				}
				if c.opts.SQPoll && se.Flags&SetupSQPoll == 0 {
					t.Errorf("SQPOLL was dropped: %v", err)
				}
				return
			}
			if fd != 99 || p.Flags&c.bad != 0 {
				t.Errorf("fd %d flags %s", fd, FlagString(p.Flags))
			}
			if c.bad == 0 && len(calls) != 1 {
				t.Errorf("%d setup calls with nothing refused", len(calls))
			}
			// Every ring replaced by a better one is closed.
			if want := len(calls) - countRefused(calls, c.bad) - 1; len(closed) != want {
				t.Errorf("closed %d rings, want %d", len(closed), want)
			}
		})
	}
}

func countRefused(calls []uint32, bad uint32) int {
	n := 0
	for _, f := range calls {
		if f&bad != 0 {
			n++
		}
	}
	return n
}

func TestNewRealStepDown(t *testing.T) {
	checkFds(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// DEFER_TASKRUN with SQPOLL is refused by every kernel; it is dropped
	// and SQPOLL is kept.
	r := newTestRing(t, 4, Options{SQPoll: true, SQThreadIdle: 10, SingleIssuer: true, DeferTaskrun: true})
	if r.Flags()&SetupSQPoll == 0 {
		t.Fatalf("SQPOLL dropped: flags %s", FlagString(r.Flags()))
	}
	if !slices.Contains(r.Dropped(), "DEFER_TASKRUN") {
		t.Errorf("dropped %v, want DEFER_TASKRUN among them", r.Dropped())
	}
	r.GetSQE().PrepNop(7)
	if c := reap(t, r, 1)[0]; c.UserData != 7 {
		t.Errorf("user_data %d", c.UserData)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// With SQPOLL the kernel's poller thread consumes the SQEs, and sleeps
// when idle: both submit calls must wake it (a NOP then completes without
// another io_uring_enter), and report at most the SQEs they published.
func TestSubmitSQPoll(t *testing.T) {
	checkFds(t)
	r := newTestRing(t, 8, Options{SQPoll: true, SQThreadIdle: 1})
	if r.Flags()&SetupSQPoll == 0 {
		t.Fatalf("SQPOLL dropped: flags %s", FlagString(r.Flags()))
	}
	for i, submit := range []struct {
		name string
		fn   func() (int, error)
	}{
		{"SubmitNoWait", r.SubmitNoWait},
		{"Submit", r.Submit},
	} {
		time.Sleep(20 * time.Millisecond) // the poller goes to sleep after 1 ms idle
		r.GetSQE().PrepNop(uint64(i))
		n, err := submit.fn()
		if err != nil || n < 0 || n > 1 {
			t.Fatalf("%s: %d, %v; want 0 or 1 published", submit.name, n, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for r.CQReady() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no completion in 10s: the poller was not woken", submit.name)
			}
			time.Sleep(time.Millisecond)
		}
		var c [1]CQE
		r.PeekBatch(c[:])
		r.Advance(1)
		if c[0].UserData != uint64(i) || c[0].Res != 0 {
			t.Errorf("%s: CQE %+v, want user_data %d, res 0", submit.name, c[0], i)
		}
	}
}

// With nothing in flight, the wait that follows EAGAIN/EBUSY must end on its
// own instead of hanging.
func TestWaitBrieflyReturns(t *testing.T) {
	r := newTestRing(t, 4, Options{})
	start := time.Now()
	r.waitBriefly()
	r.waitBriefly()
	if d := time.Since(start); d < time.Millisecond || d > 2*time.Second {
		t.Fatalf("two brief waits took %v, want about 2ms", d)
	}
}

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
