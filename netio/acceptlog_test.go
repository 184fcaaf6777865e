package netio

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

// TestAcceptLogRate: a storm of failed accepts gives one line at once and
// then at most one per acceptLogEvery, each with the failures since the
// line before.
func TestAcceptLogRate(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	cfg := Config{Log: func(m string) { mu.Lock(); lines = append(lines, m); mu.Unlock() }}
	a := newAcceptLog(cfg, "epoll", netip.MustParseAddrPort("127.0.0.1:7007"), func() int64 { return 52 })
	var wg sync.WaitGroup
	for range 4 { // loops failing at once
		wg.Go(func() {
			for range 1000 {
				a.failed(sys.EMFILE)
			}
		})
	}
	wg.Wait()
	if len(lines) != 1 {
		t.Fatalf("%d lines for 4000 failures within a second, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, want := range []string{"epoll server on 127.0.0.1:7007: accept: too many open files (EMFILE", "while the 52 open are served", "the first failed accept"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("%q does not say %q", lines[0], want)
		}
	}
	a.mu.Lock()
	a.last = a.last.Add(-acceptLogEvery) // a second has passed
	a.mu.Unlock()
	a.failed(errors.New("something else"))
	if len(lines) != 2 || !strings.Contains(lines[1], "accept: something else;") || !strings.Contains(lines[1], "4000 failed accepts in the last 1s, 4001 in all") {
		t.Errorf("second line %q", lines[1:])
	}
	// No Log: nothing to do, and no panic.
	newAcceptLog(Config{}, "net", netip.AddrPort{}, nil).failed(sys.EMFILE)
}
