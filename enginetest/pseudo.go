package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/iopath/iopath/engine"
)

// pseudoFiles are files whose size is not known in advance: procfs files
// report size 0, a sysfs attribute 4096 whatever its content. Their
// content is stable enough to compare with os.ReadFile's (a file that
// changes between the reads before and after a run is read again).
var pseudoFiles = []string{
	"/proc/version",
	"/proc/self/mountinfo",
	"/proc/crypto", // ~11 KiB: many blocks, reads ending short
	"/sys/kernel/mm/transparent_hugepage/enabled",
}

// checkPseudo: every engine either reads a file of unknown size
// completely, in order, in blocks of the block size at offsets k*bs, or
// refuses it with an error wrapping ErrNotSupported before delivering any
// block (so that the caller may read it with another engine). A read
// past Job.PseudoLimit fails with ErrLimit.
func checkPseudo(t *testing.T, e engine.Engine) {
	if e.Caps().NoData {
		t.Skip("the engine reads no data")
	}
	for _, path := range pseudoFiles {
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: %v; not checked", path, err)
			continue
		}
		for _, bs := range []int{512, 4 << 10, 128 << 10} {
			for _, w := range []int{1, 3} {
				for _, pat := range patterns {
					job := engine.Job{Path: path, BlockSize: bs, Workers: w, Pattern: pat, QueueDepth: 4}
					t.Run(fmt.Sprintf("%s/bs=%d/w=%d/%s", path, bs, w, pat), func(t *testing.T) {
						checkPseudoFile(t, e, job)
					})
				}
			}
		}
	}
	t.Run("limit", func(t *testing.T) { checkPseudoLimit(t, e) })
}

// pseudoRun is one run over a pseudo-file: the bytes in delivery order.
type pseudoRun struct {
	mu   sync.Mutex
	got  []byte
	lens []int
	bad  error
}

func (r *pseudoRun) Block(w int, off int64, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w != 0 && r.bad == nil {
		r.bad = fmt.Errorf("block at offset %d from worker %d: a file of unknown size is read by one worker", off, w)
	}
	if off != int64(len(r.got)) && r.bad == nil {
		r.bad = fmt.Errorf("block at offset %d after %d bytes: out of order", off, len(r.got))
	}
	r.got = append(r.got, b...)
	r.lens = append(r.lens, len(b))
	return nil
}

func checkPseudoFile(t *testing.T, e engine.Engine, job engine.Job) {
	pr := prepare(t, e, job)
	for range 5 {
		before, err := os.ReadFile(job.Path)
		if err != nil {
			t.Fatal(err)
		}
		r := &pseudoRun{}
		st, err := pr.Run(context.Background(), r)
		if errors.Is(err, engine.ErrNotSupported) {
			if len(r.lens) > 0 {
				t.Errorf("Run said %v after delivering %d blocks; it must say so before any", err, len(r.lens))
			}
			namesPath(t, err, job.Path)
			return
		}
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		after, err := os.ReadFile(job.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			continue // the file changed meanwhile: try again
		}
		if r.bad != nil {
			t.Fatal(r.bad)
		}
		if !bytes.Equal(r.got, before) {
			i := 0
			for i < min(len(r.got), len(before)) && r.got[i] == before[i] {
				i++
			}
			t.Fatalf("read %d bytes, want os.ReadFile's %d; they differ from byte %d", len(r.got), len(before), i)
		}
		for i, n := range r.lens {
			if n == 0 || (n != job.BlockSize && i != len(r.lens)-1) {
				t.Fatalf("block %d has %d bytes; every block but the last has %d", i, n, job.BlockSize)
			}
		}
		if tot := st.Total(); tot.Bytes != int64(len(before)) || tot.Blocks != int64(len(r.lens)) {
			t.Errorf("stats count %d bytes in %d blocks, want %d in %d", tot.Bytes, tot.Blocks, len(before), len(r.lens))
		}
		return
	}
	t.Logf("%s changed during every run; not compared", job.Path)
}

// checkPseudoLimit: a file of unknown size of exactly Job.PseudoLimit
// bytes is read; one byte more is an error wrapping ErrLimit that names
// the path and the field that raises the limit. /proc/self/pagemap, as
// long as the address space, stops there too.
func checkPseudoLimit(t *testing.T, e engine.Engine) {
	const path = "/proc/version"
	want, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	n := int64(len(want))
	run := func(path string, limit int64) (*pseudoRun, error) {
		pr := prepare(t, e, engine.Job{Path: path, BlockSize: 512, PseudoLimit: limit})
		r := &pseudoRun{}
		_, err := pr.Run(context.Background(), r)
		return r, err
	}
	r, err := run(path, n)
	if errors.Is(err, engine.ErrNotSupported) {
		return // checked by checkPseudoFile
	}
	if err != nil || !bytes.Equal(r.got, want) {
		t.Errorf("limit %d, the file's size: %v, %d bytes, want all %d", n, err, len(r.got), n)
	}
	for _, c := range []struct {
		path  string
		limit int64
	}{{path, n - 1}, {"/proc/self/pagemap", 1 << 20}} {
		_, err = run(c.path, c.limit)
		if !errors.Is(err, engine.ErrLimit) {
			t.Errorf("%s with limit %d: %v, want an error wrapping ErrLimit", c.path, c.limit, err)
			continue
		}
		namesPath(t, err, c.path)
		if !strings.Contains(err.Error(), "PseudoLimit") {
			t.Errorf("%q does not say what raises the limit", err)
		}
	}
	if _, err := e.Prepare(engine.Job{Path: path, PseudoLimit: -1}); err == nil {
		t.Error("Prepare accepted a negative PseudoLimit")
	}
}
