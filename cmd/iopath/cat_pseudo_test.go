package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/iopath/iopath/engine"
)

// lineOf returns the line of b that starts with prefix.
func lineOf(b []byte, prefix string) string {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// cat prints files of /proc and /sys, whose size is not known in advance,
// as cat(1) does, through every engine: read, pread and readv read them to
// their end; mmap and io_uring, which need a size, say so on stderr in one
// line and cat reads the file with read instead. It used to print nothing
// (/proc) or fail with "file changed size" (sysfs) or ENODEV (mmap).
func TestCatPseudoFiles(t *testing.T) {
	for _, name := range engine.Names() {
		e, _ := engine.Lookup(name)
		if e.Caps().NoData {
			continue
		}
		for _, flags := range [][]string{{"--bs", "4k"}, {"--bs", "512", "--workers", "3"}} {
			t.Run(name+strings.Join(flags, ""), func(t *testing.T) {
				for _, path := range []string{"/proc/self/status", "/proc/cpuinfo", "/sys/kernel/mm/transparent_hugepage/enabled"} {
					if _, err := os.Stat(path); err != nil {
						t.Logf("%s: %v; not checked", path, err)
						continue
					}
					catPseudo(t, name, flags, path)
				}
			})
		}
	}
}

func catPseudo(t *testing.T, name string, flags []string, path string) {
	t.Helper()
	args := append(append([]string{"cat", "-e", name}, flags...), path)
	for range 5 {
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, errOut)
		}
		if errOut != "" {
			fellBack := fmt.Sprintf("iopath: cat: %s cannot read %s (", name, path)
			ok := strings.HasPrefix(errOut, fellBack) && strings.HasSuffix(errOut, "); reading it with read\n") ||
				strings.Contains(errOut, "falling back to pread") // io_uring unavailable here
			if !ok || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%s: stderr %q, want nothing or one line saying the engine cannot read it", path, errOut)
			}
		} else if name == "mmap" || name == "io_uring" {
			t.Errorf("%s: %s read a pseudo-file without saying it fell back", path, name)
		}
		if strings.HasPrefix(path, "/proc/self/") {
			// Of this process, which is running: a stable line.
			if got, want := lineOf([]byte(out), "Name:"), lineOf(before, "Name:"); got == "" || got != want {
				t.Errorf("%s: Name line %q, want %q (%d bytes out)", path, got, want, len(out))
			}
			return
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			continue // it changed meanwhile (cpu MHz): again
		}
		if out != string(before) {
			t.Errorf("%s: %d bytes, want os.ReadFile's %d", path, len(out), len(before))
		}
		return
	}
	t.Logf("%s changed during every run; not compared", path)
}
