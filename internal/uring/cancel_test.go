package uring

import (
	"runtime"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

// A read of an empty pipe waits (io_uring arms a poll); PrepCancel by its
// user_data ends it with -ECANCELED, and a cancel that matches nothing
// answers -ENOENT.
func TestCancel(t *testing.T) {
	checkFds(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newTestRing(t, 8, Options{SingleIssuer: true, DeferTaskrun: true, CoopTaskrun: true})
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

	r.GetSQE().PrepRead(int32(p[0]), buf, ^uint64(0), 1)
	r.GetSQE().PrepCancel(99, 0, 2) // nothing has user_data 99
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	c := reap(t, r, 1)
	if c[0].UserData != 2 || c[0].Res != -int32(syscall.ENOENT) {
		t.Fatalf("cancel of nothing: %+v, want user_data 2 res -ENOENT", c[0])
	}
	if r.CQReady() != 0 {
		t.Fatal("the pipe read completed with nothing written")
	}
	r.GetSQE().PrepCancel(1, 0, 3)
	got := map[uint64]int32{}
	for _, c := range reap(t, r, 2) {
		got[c.UserData] = c.Res
	}
	if res, ok := got[1]; !ok || res != -int32(syscall.ECANCELED) {
		t.Errorf("read: %v, want -ECANCELED", got)
	}
	if res, ok := got[3]; !ok || res != 0 {
		t.Errorf("cancel: %v, want 0", got)
	}
}
