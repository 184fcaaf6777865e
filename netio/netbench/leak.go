package netbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// leakSettle is how long a server has, after a run's load generator has
// exited, to close the connections it served before the descriptors it
// still holds count as leaked.
const leakSettle = 2 * time.Second

// serverUse is what a server process holds: open descriptors and
// resident memory (bytes).
type serverUse struct {
	fds int
	rss int64
}

// readUse reads pid's open descriptors (/proc/PID/fd) and resident set
// (VmRSS of /proc/PID/status).
func readUse(pid int) (serverUse, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return serverUse{}, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return serverUse{}, err
	}
	u := serverUse{fds: len(ents)}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			f := bytes.Fields(v) // "12345 kB"
			if len(f) == 2 {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				if err != nil {
					return serverUse{}, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, v)
				}
				u.rss = kb << 10
			}
		}
	}
	return u, nil
}

// settledUse reads pid's use once its descriptors are back to want or
// fewer, or leakSettle has passed, or ctx ended.
func settledUse(ctx context.Context, pid, want int) (serverUse, error) {
	deadline := time.Now().Add(leakSettle)
	for {
		u, err := readUse(pid)
		if err != nil || u.fds <= want || time.Now().After(deadline) || ctx.Err() != nil {
			return u, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
