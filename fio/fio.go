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

// writeTwins maps iopath write engines to the fio ioengines that make
// the same calls.
var writeTwins = map[string]string{
	"write":    "sync",
	"pwrite":   "psync",
	"pwritev":  "pvsync",
	"mmap":     "mmap",
	"io_uring": "io_uring",
}

// Twin returns fio's ioengine for an iopath (read) engine name; ok is
// false when there is none (e.g. "null").
func Twin(engine string) (ioengine string, ok bool) {
	ioengine, ok = twins[engine]
	return ioengine, ok
}

// TwinWrite returns fio's ioengine for an iopath write engine name
// ("write", "pwrite", "pwritev", "mmap", "io_uring"); ok is false when
// there is none. Job.IOEngine refines it (pwritev of several blocks in
// sequence is vsync).
func TwinWrite(engine string) (ioengine string, ok bool) {
	ioengine, ok = writeTwins[engine]
	return ioengine, ok
}

// Check reports why the fio of info cannot run j faithfully although
// j.Validate accepts it; nil when it can, or when info's version is not
// known (Probe and Find always know it):
//
//   - fio before 3.42 maps each job's region of the file from offset 0
//     in its mmap engine (fixed by fio commit 4857911a), so with several
//     workers every job but the first reads or writes the first job's
//     region, with an mmap and a munmap per block (seen with strace on
//     fio 3.33: 64 mmaps of [0, share) for a 64-block second job, whose
//     own region was left untouched);
//   - --sync=dsync (the dsync twin of every engine but mmap) arrived in
//     fio 3.24; before, --sync was a flag for O_SYNC.
func (info Info) Check(j Job) error {
	major, minor, ok := parseVersion(info.Version)
	if !ok {
		return nil
	}
	older := func(ma, mi int) bool { return major < ma || major == ma && minor < mi }
	twin := j.IOEngine()
	switch {
	case twin == "mmap" && j.Workers > 1 && older(3, 42):
		return fmt.Errorf("%s's mmap engine maps every job's region from the start of the file "+
			"(fixed in fio-3.42): with %d workers the jobs after the first would use the first one's "+
			"region, mapping it again for every block; run one worker", info.Version, j.Workers)
	case j.Write && j.Sync == SyncDSync && twin != "mmap" && older(3, 24):
		return fmt.Errorf("%s has no --sync=dsync (O_DSYNC; fio-3.24 or newer)", info.Version)
	}
	return nil
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
