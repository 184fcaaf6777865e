package metrics

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ProcessCPU returns the user and system CPU time process pid has used so
// far, every thread of it included (live and exited ones; not its
// children), from fields 14 (utime) and 15 (stime) of /proc/PID/stat. The
// resolution is one clock tick (TickDuration, 10 ms), so a difference of
// two readings is within ±10 ms per field. It is how a load generator
// measures a server that runs in another process.
func ProcessCPU(pid int) (user, sys time.Duration, err error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path) // a *fs.PathError naming the path
	if err != nil {
		return 0, 0, err
	}
	return parsePIDStat(path, b)
}

// parsePIDStat parses a /proc/PID/stat line. Field 2, comm, is the
// executable's name in parentheses and may itself hold spaces and
// parentheses ("(a) b)"), so the fields are counted from the LAST ')':
// after it come field 3 (state), and utime and stime are the 12th and 13th
// fields from there.
func parsePIDStat(path string, b []byte) (user, sys time.Duration, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("%s: malformed: no ')' closing the command name", path)
	}
	f := bytes.Fields(b[i+1:])
	const utime, stime = 14 - 3, 15 - 3 // indexes in f, which starts at field 3
	if len(f) <= stime {
		return 0, 0, fmt.Errorf("%s: malformed: %d fields after the command name, want at least %d", path, len(f), stime+1)
	}
	u, err := strconv.ParseUint(string(f[utime]), 10, 63)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: malformed utime (field 14): %w", path, err)
	}
	s, err := strconv.ParseUint(string(f[stime]), 10, 63)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: malformed stime (field 15): %w", path, err)
	}
	return time.Duration(u) * TickDuration, time.Duration(s) * TickDuration, nil
}
