package fio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// Info is a usable fio binary.
type Info struct {
	Path    string // the binary, as found on PATH
	Version string // as `fio --version` prints it, e.g. "fio-3.33"
}

// The oldest fio whose output this package understands: 3.18 reports total
// latency (lat_ns) percentiles in JSON beside completion latency.
const (
	MinMajor = 3
	MinMinor = 18
)

// installHint says how to get fio.
const installHint = "install it (Debian/Ubuntu: apt-get install fio; Fedora: dnf install fio)"

// ErrNotFound is wrapped by Find's error when fio is not on PATH.
var ErrNotFound = errors.New("fio not found on PATH")

// Find looks for fio on PATH and checks its version (see Probe). The error
// says how to install fio when it is absent.
func Find() (Info, error) {
	path, err := exec.LookPath("fio")
	if err != nil {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, installHint)
	}
	return Probe(path)
}

// Probe runs `path --version` and checks that it is fio MinMajor.MinMinor
// or newer; the error names the version found when it is older.
func Probe(path string) (Info, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return Info{}, fmt.Errorf("%s --version: %v%s", path, err, lastLine(out.Bytes()))
	}
	v := string(bytes.TrimSpace(out.Bytes()))
	major, minor, ok := parseVersion(v)
	if !ok {
		return Info{}, fmt.Errorf("%s --version printed %q, not a fio version", path, v)
	}
	if major < MinMajor || major == MinMajor && minor < MinMinor {
		return Info{}, fmt.Errorf("%s is %s; iopath needs fio-%d.%d or newer: %s",
			path, v, MinMajor, MinMinor, installHint)
	}
	return Info{Path: path, Version: v}, nil
}

var versionRE = regexp.MustCompile(`^fio-(\d+)\.(\d+)`)

// parseVersion reads "fio-3.33", "fio-3.35-139-gc5d8" or "fio-3.36-dirty".
func parseVersion(v string) (major, minor int, ok bool) {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	return major, minor, err1 == nil && err2 == nil
}

// twins maps iopath engines to the fio ioengines that make the same calls.
var twins = map[string]string{
	"read":     "sync",
	"pread":    "psync",
	"readv":    "pvsync",
	"mmap":     "mmap",
	"io_uring": "io_uring",
}

// Twin returns fio's ioengine for an iopath engine name; ok is false when
// there is none (e.g. "null").
func Twin(engine string) (ioengine string, ok bool) {
	ioengine, ok = twins[engine]
	return ioengine, ok
}

// lastLine returns ": " and the last non-empty line of b, or "" when b has
// none.
func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); len(l) > 0 {
			return ": " + string(l)
		}
	}
	return ""
}
