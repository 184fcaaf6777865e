package uring

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

// benchOptions are the two kinds of ring the engines drive: a plain one
// (the file engines' pool), and the event loops' (one issuer, completion
// work deferred to its thread).
var benchOptions = []struct {
	name string
	opts Options
}{
	{"plain", Options{}},
	{"defer", Options{SingleIssuer: true, DeferTaskrun: true, CoopTaskrun: true, TaskrunFlag: true, SubmitAll: true, NoSQArray: true}},
}

// BenchmarkSubmitNop measures the submit path itself: batch NOPs
// prepared, submitted and reaped per round, with SubmitAndWait (which
// waits for them) and with SubmitNoWait then SubmitAndWait only if
// nothing is ready (the event loops' pattern). ns/op is per NOP.
func BenchmarkSubmitNop(b *testing.B) {
	for _, o := range benchOptions {
		for _, batch := range []int{1, 32} {
			for _, how := range []string{"wait", "nowait"} {
				b.Run(fmt.Sprintf("ring=%s/batch=%d/submit=%s", o.name, batch, how), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					r := newTestRing(b, 64, o.opts)
					benchRounds(b, r, batch, how == "nowait", func(s *SQE, i int) { s.PrepNop(uint64(i)) })
				})
			}
		}
	}
}

// BenchmarkSubmitRead is BenchmarkSubmitNop with a 4 KiB read of a file
// in the page cache per request: a request whose completion has work in
// it, as the file engines' reads have.
func BenchmarkSubmitRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf, err := sys.MmapAnon(32 * 4096)
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Munmap(buf)
	fd := int32(f.Fd())
	for _, o := range benchOptions {
		for _, batch := range []int{1, 32} {
			b.Run(fmt.Sprintf("ring=%s/batch=%d", o.name, batch), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := newTestRing(b, 64, o.opts)
				b.SetBytes(4096)
				benchRounds(b, r, batch, false, func(s *SQE, i int) {
					k := i % batch
					s.PrepRead(fd, buf[k*4096:(k+1)*4096], uint64(k%16)*4096, uint64(i))
				})
			})
		}
	}
}

// benchRounds runs b.N requests in rounds of batch: prepare them, submit
// (nowait: SubmitNoWait, waiting only when nothing is ready), reap them
// all, checking each result.
func benchRounds(b *testing.B, r *Ring, batch int, nowait bool, prep func(s *SQE, i int)) {
	cqes := make([]CQE, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		for i := range n {
			prep(r.GetSQE(), done+i)
		}
		for got := 0; got < n; {
			var err error
			if nowait {
				_, err = r.SubmitNoWait()
				if err == nil && r.CQReady() == 0 {
					_, err = r.SubmitAndWait(1)
				}
			} else {
				_, err = r.SubmitAndWait(uint32(n - got))
			}
			if err != nil {
				b.Fatal(err)
			}
			k := r.PeekBatch(cqes)
			for _, c := range cqes[:k] {
				if c.Res < 0 {
					b.Fatalf("request %d: %v", c.UserData, syscall.Errno(-c.Res))
				}
			}
			r.Advance(k)
			got += k
		}
		done += n
	}
}
