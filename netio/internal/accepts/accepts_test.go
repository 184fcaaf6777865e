package accepts

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

// TestLogRate: a storm of failed accepts gives one line at once and then
// at most one per LogEvery, each with the failures since the line before.
func TestLogRate(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	a := NewLog(func(m string) { mu.Lock(); lines = append(lines, m); mu.Unlock() },
		"epoll server on 127.0.0.1:7007", func() int64 { return 52 })
	var wg sync.WaitGroup
	for range 4 { // loops failing at once
		wg.Go(func() {
			for range 1000 {
				a.Failed(sys.EMFILE)
			}
		})
	}
	wg.Wait()
	if len(lines) != 1 {
		t.Fatalf("%d lines for 4000 failures within a second, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, want := range []string{"epoll server on 127.0.0.1:7007: accept: too many open files (EMFILE: the process's RLIMIT_NOFILE of ",
		"raise it with ulimit -n", "wait in the listen queue, unserved, while the 52 open are served", "the first failed accept"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("%q does not say %q", lines[0], want)
		}
	}
	a.mu.Lock()
	a.last = a.last.Add(-LogEvery) // a second has passed
	a.mu.Unlock()
	a.Failed(errors.New("something else"))
	if len(lines) != 2 || !strings.Contains(lines[1], "accept: something else;") || !strings.Contains(lines[1], "4000 failed accepts in the last 1s, 4001 in all") {
		t.Errorf("second line %q", lines[1:])
	}
	// No log function, or no Log: nothing said, and no panic.
	NewLog(nil, "net server", nil).Failed(sys.EMFILE)
	var none *Log
	none.Failed(sys.EMFILE)
}

func TestDescribe(t *testing.T) {
	for err, want := range map[error]string{
		sys.ENFILE:                  "ENFILE: fs.file-max",
		sys.ENOMEM:                  "out of memory (ENOMEM)",
		sys.ENOBUFS:                 "out of memory (ENOBUFS)",
		errors.New("table is full"): "table is full",
	} {
		if got := Describe(err); !strings.Contains(got, want) {
			t.Errorf("Describe(%v) = %q, want it to say %q", err, got, want)
		}
	}
}
