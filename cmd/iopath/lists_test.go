package main

import (
	"strings"
	"testing"
)

// TestEmptyListItems: an empty item in a comma-separated flag is a slip
// (a doubled or trailing comma), and running without it would measure
// something other than what was written: a usage error, one line.
func TestEmptyListItems(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--bs", "4k,,8k"},
		{"bench", "--bs", "4k,"},
		{"bench", "--workers", "1,,2"},
		{"bench", "--qd", ",8"},
		{"bench", "--engines", "pread,,mmap"},
		{"bench", "--engines", ""},
		{"bench", "--cache", "warm,"},
		{"bench", "--tree", "--workers", "1,,2"},
		{"bench", "--tree", "--engines", "raw,,pool"},
		{"net", "bench", "--conns", "1,,10"},
		{"net", "bench", "--sizes", "64,"},
		{"net", "bench", "--serve-file", "--file-sizes", "4KiB,,1MiB"},
		{"net", "bench", "--writev", "--parts", "1,,2"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// A bad --format as well: flags are parsed before any is
			// checked, so the list must be what is refused, and nothing
			// runs if it is not.
			_, errOut, code := runCLI(append(args, "--format", "nope")...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "iopath: ") || !strings.Contains(errOut, "empty") {
				t.Errorf("exit %d, stderr %q; want 2 and one line saying an item is empty", code, errOut)
			}
		})
	}
}
