package batch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestStopsWithinASecond: an error in one worker — fn's own, or a file's
// error that fn returns — ends the whole batch within 1 s, with cold reads
// in flight (the io_uring engine has Depth of them per worker).
func TestStopsWithinASecond(t *testing.T) {
	dir, paths := manyFiles(t, 240, 128<<10)
	missing := filepath.Join(dir, "missing")
	errStop := errors.New("stop")
	for _, e := range testEngines(t) {
		for _, how := range []string{"fn-error", "file-error"} {
			t.Run(fmt.Sprintf("%s/%s", e.Name(), how), func(t *testing.T) {
				warm(t)
				noLeaks(t)
				syscall.Sync() // DONTNEED leaves dirty pages
				for _, p := range paths {
					dropCache(t, p)
				}
				if n := residentPages(t, paths[100]); n > 0 {
					t.Fatalf("%d pages of %s cached after POSIX_FADV_DONTNEED", n, paths[100])
				}
				list := paths
				if how == "file-error" {
					// Far enough in that reads are in flight when it
					// comes up.
					list = append(append(append([]string(nil), paths[:40]...), missing), paths[40:]...)
				}
				var once sync.Once
				var failedAt time.Time
				_, err := Read(context.Background(), e, Job{Paths: list, Workers: 2}, func(f *File) error {
					var err error
					switch {
					case how == "fn-error" && f.Path == paths[20]:
						err = errStop
					case how == "file-error" && f.Err != nil:
						err = f.Err
					}
					if err != nil {
						once.Do(func() { failedAt = time.Now() })
					}
					return err
				})
				took := time.Since(failedAt)
				skipUnsupported(t, e, err)
				switch {
				case failedAt.IsZero():
					t.Fatalf("fn never failed (Read returned %v)", err)
				case how == "fn-error" && !errors.Is(err, errStop):
					t.Fatalf("Read returned %v, want fn's error", err)
				case how == "file-error" && !isPathErr(err, missing):
					t.Fatalf("Read returned %v, want the missing file's error", err)
				}
				if took > time.Second {
					t.Errorf("Read returned %v after fn failed, want within 1s", took)
				}
			})
		}
	}
}
