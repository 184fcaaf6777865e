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
func TestReplacedWhileRead(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, workers := range []int{1, 2} {
			for _, cold := range []bool{false, true} {
				name := fmt.Sprintf("%s/workers=%d/warm", e.Name(), workers)
				if cold {
					name = fmt.Sprintf("%s/workers=%d/cold", e.Name(), workers)
				}
				t.Run(name, func(t *testing.T) {
					warm(t)
					noLeaks(t)
					s := enginetest.NewSwap(t)
					s.Cold = cold
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
