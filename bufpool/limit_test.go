package bufpool

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

// A file that states no size is read to its end up to the limit, and no
// further: /dev/zero and /proc/self/pagemap never end, and used to fill
// memory. A file of exactly the limit is read whole; a regular file that
// states its size is never limited.
func TestReadFileLimit(t *testing.T) {
	var p Pool
	for _, c := range []struct {
		path  string
		limit int64
		want  string
	}{
		{"/dev/zero", 1 << 20, "1MiB"},
		{"/proc/self/pagemap", 1 << 20, "1MiB"},
		{"/proc/self/pagemap", 0, "64MiB"},
		{"/sys/kernel/mm/transparent_hugepage/enabled", 4, "4B"}, // states 4096 bytes, which means nothing
	} {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("%s: %v; not checked", c.path, err)
			continue
		}
		done := make(chan error, 1)
		go func() {
			b, err := p.ReadFileLimit(c.path, c.limit)
			if err == nil {
				b.Release()
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute): // a hang guard, not a measurement
			t.Fatalf("%s with limit %d: no end", c.path, c.limit)
		}
		var pe *fs.PathError
		if !errors.Is(err, ErrLimit) || !errors.As(err, &pe) || pe.Path != c.path {
			t.Errorf("%s with limit %d: %v, want an *fs.PathError wrapping ErrLimit", c.path, c.limit, err)
			continue
		}
		for _, w := range []string{c.want, "ReadFileLimit"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q does not say %q", err, w)
			}
		}
	}
	const version = "/proc/version"
	want, err := os.ReadFile(version)
	if err != nil {
		t.Skip(err)
	}
	n := int64(len(want))
	b, err := p.ReadFileLimit(version, n)
	if err != nil || string(b.Bytes()) != string(want) {
		t.Errorf("%s with limit %d, its size: %v", version, n, err)
	}
	b.Release()
	if _, err := p.ReadFileLimit(version, n-1); !errors.Is(err, ErrLimit) {
		t.Errorf("%s with limit %d: %v, want ErrLimit", version, n-1, err)
	}
	data := pattern(3, 5000)
	path := writeFile(t, t.TempDir(), data)
	if b, err := p.ReadFileLimit(path, 100); err != nil || !equal(b.Bytes(), data) {
		t.Errorf("a regular file of 5000 bytes with limit 100: %v", err)
	} else {
		b.Release()
	}
	if _, err := p.ReadFileLimit(path, -1); err == nil {
		t.Error("a negative limit was accepted")
	}
	checkNoLeak(t, &p)
}
