package batch

import (
	"context"
	"fmt"
	"testing"

	"github.com/iopath/iopath/enginetest"
)

// TestReplacedWhileRead: one path renamed over, in a loop, by versions of
// several sizes around the buffer's boundaries (see enginetest.Swap), and
// read many times per Run by every engine, with one and two workers, warm
// and cold. Every file delivered is exactly one version, and none is an
// error: the path always holds a complete file. (The io_uring engine used
// to take the size from a STATX by path and reopen the path for the rest
// of a large file: prefixes, spliced versions and "replaced" errors.)
//
// With gaps the path is also removed now and then: a file the engine
// could not open is an ENOENT error, one it opened is read whole (the
// io_uring engine's STATX by path then fails after its OPENAT succeeded).
func TestReplacedWhileRead(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, c := range []struct {
			workers   int
			cold, gap bool
		}{{1, false, false}, {1, true, false}, {2, false, false}, {2, true, false}, {2, false, true}, {2, true, true}} {
			workers, cold := c.workers, c.cold
			if e.Name() == "readfile" && workers > 1 && !c.gap {
				continue // one goroutine whatever the job says
			}
			name := fmt.Sprintf("%s/workers=%d/warm", e.Name(), workers)
			if cold {
				name = fmt.Sprintf("%s/workers=%d/cold", e.Name(), workers)
			}
			if c.gap {
				name += "/gaps"
			}
			{
				t.Run(name, func(t *testing.T) {
					warm(t)
					noLeaks(t)
					s := enginetest.NewSwap(t)
					s.Cold, s.Gaps = cold, c.gap
					paths := make([]string, 64)
					for i := range paths {
						paths[i] = s.Path
					}
					job := Job{Paths: paths, Workers: workers, Depth: 16}
					s.Hammer(t, func(got func([]byte, error)) error {
						_, err := Read(context.Background(), e, job, func(f *File) error {
							got(f.Data, f.Err)
							return nil
						})
						skipUnsupported(t, e, err)
						return err
					})
				})
			}
		}
	}
}
