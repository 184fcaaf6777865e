package batch

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// The io_uring engine leaves each file open in its direct slot after its
// last read and relies on the kernel closing it when the next OPENAT
// replaces the slot (io_install_fixed_file drops an occupied slot's file)
// or when the ring's file table goes away. This checks both on this kernel
// with the read end of a FIFO in the slot: while it is open a writer can
// write; once it is closed the writer gets EPIPE.
func TestUringOpenReplacesSlot(t *testing.T) {
	uringEngineFor(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifoZ := append([]byte(fifo), 0)
	regZ := append([]byte(regular), 0)

	for _, how := range []string{"replaced", "ring-closed"} {
		t.Run(how, func(t *testing.T) {
			r, err := uring.New(8, uring.Options{})
			if err != nil {
				t.Skipf("io_uring: %v", err)
			}
			defer r.Close()
			if err := r.RegisterFilesSparse(1); err != nil {
				t.Fatal(err)
			}
			open := func(pathZ []byte) {
				t.Helper()
				sqe := r.GetSQE()
				sqe.PrepOpenatDirect(sys.AT_FDCWD, &pathZ[0], syscall.O_RDONLY|syscall.O_NONBLOCK, 0, 0, 1)
				if _, err := r.SubmitAndWait(1); err != nil {
					t.Fatal(err)
				}
				var c [1]uring.CQE
				if r.PeekBatch(c[:]) != 1 || c[0].Res < 0 {
					t.Fatalf("OPENAT direct %s: %+v", pathZ, c[0])
				}
				r.Advance(1)
				runtime.KeepAlive(pathZ)
			}
			open(fifoZ)
			// A non-blocking open for writing succeeds only while a
			// reader has the FIFO open: the slot's file.
			w, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
			if err != nil {
				t.Fatalf("open the FIFO for writing: %v (the slot does not hold its read end)", err)
			}
			defer syscall.Close(w)
			if _, err := syscall.Write(w, []byte("a")); err != nil {
				t.Fatalf("write while the slot holds the FIFO: %v", err)
			}
			if how == "replaced" {
				open(regZ)
			} else {
				r.Close()
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := syscall.Write(w, []byte("a"))
				if err == syscall.EPIPE {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("write after the slot was %s: %v, want EPIPE (the FIFO is still open)", how, err)
				}
				// The kernel may put the file a moment later.
				if how == "replaced" {
					r.GetSQE().PrepNop(2)
					r.SubmitAndWait(1)
					r.Advance(r.PeekBatch(make([]uring.CQE, 4)))
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}
