package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
)

// Result is what one fio run measured, all jobs together: the figures
// of fio's read side, or of its write side for a write job.
type Result struct {
	Version   string  // "fio version" from the output
	Write     bool    // the figures are fio's write side (a write job's)
	Bytes     int64   // bytes read or written (io_bytes), all jobs
	Blocks    int64   // reads or writes completed (total_ios), all jobs
	RuntimeNs int64   // runtime: the longest job's, whole milliseconds
	BytesPerS float64 // Bytes over RuntimeNs; 0 when RuntimeNs is 0
	IOPS      float64 // Blocks over RuntimeNs
	// PassBytes is the bytes one pass covers (Job.PassBytes); set by Run,
	// 0 from Parse. Bytes/PassBytes is the number of passes.
	PassBytes int64

	// UserNs and SysNs are the CPU time of all fio jobs' I/O threads
	// (usr_cpu/100 * job_runtime, summed over job entries: with
	// group_reporting usr_cpu is the mean over jobs and job_runtime their
	// sum). Whole milliseconds; without fio's setup, main process and
	// io_uring's kernel threads (SQPOLL, and io-wq workers that carry out
	// buffered writes and syncs).
	UserNs, SysNs int64
	// ProcessUserNs and ProcessSysNs are the fio process tree's own
	// rusage (wait4): every job, fio's main process, setup, and io_uring's
	// kernel threads (the SQPOLL thread). Set by Run, 0 from Parse.
	ProcessUserNs, ProcessSysNs int64
	Ctx, MajFlt, MinFlt         int64 // fio's ctx, majf and minf, all jobs

	// Total latency (lat_ns: submission to completion) percentiles; 0 when
	// fio reported none. With several job entries (no group_reporting)
	// each is the largest of the jobs' (an upper bound: fio's output holds
	// no histogram to merge).
	LatP50Ns, LatP90Ns, LatP99Ns, LatP999Ns, LatP9999Ns int64
	LatMaxNs                                            int64

	// SyncCount is the syncs fio timed in a write job (its "sync"
	// section: the fdatasyncs of --fdatasync=N, msyncs for the mmap
	// engine), all jobs; 0 without them. The one fsync of --end_fsync is
	// not among them: fio neither times nor counts it there (its time is
	// in RuntimeNs). The sync latencies are fio's, over the same syncs:
	// the mean, P50, P99 (the largest of the job entries' without
	// group_reporting) and maximum.
	SyncCount                                               int64
	SyncLatMeanNs, SyncLatP50Ns, SyncLatP99Ns, SyncLatMaxNs int64

	Command  []string // the argv that was run, fio binary first; set by Run
	Warnings []string // lines fio printed that were not the JSON, trimmed
}

// Parse parses fio's --output-format=json output. Text before the JSON
// (fio prints notes such as "note: both iodepth >= 1 and synchronous I/O
// engine are selected ..." there) and after it goes to Result.Warnings.
// Several job entries (no group_reporting) are summed. The figures are
// those of fio's write side when a job wrote something, else of its read
// side; output with both (a mixed job, never a twin's) is an error, and
// so is a job whose error field is not zero, naming it.
func Parse(out []byte) (*Result, error) {
	start := jsonStart(out)
	if start < 0 {
		return nil, fmt.Errorf("fio output has no JSON object%s", excerpt(out))
	}
	var r Result
	r.Warnings = appendLines(r.Warnings, out[:start])
	dec := json.NewDecoder(bytes.NewReader(out[start:]))
	var doc fioOutput
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("fio output is not valid JSON: %v", err)
	}
	r.Warnings = appendLines(r.Warnings, out[start+int(dec.InputOffset()):])
	if len(doc.Jobs) == 0 {
		return nil, errors.New("fio output has no jobs")
	}
	r.Version = doc.Version
	var read bool
	for _, j := range doc.Jobs {
		if j.Error != 0 {
			return nil, fmt.Errorf("fio job %q failed with error %d (%v)", j.Name, j.Error, syscall.Errno(j.Error))
		}
		read = read || j.Read.IOBytes > 0
		r.Write = r.Write || j.Write.IOBytes > 0
	}
	if read && r.Write {
		return nil, errors.New("fio output has both read and write figures (a mixed job, not a twin's)")
	}
	var runtimeMs int64
	var syncNsSum float64
	lat := []*int64{&r.LatP50Ns, &r.LatP90Ns, &r.LatP99Ns, &r.LatP999Ns, &r.LatP9999Ns}
	for _, j := range doc.Jobs {
		d := j.Read
		if r.Write {
			d = j.Write
		}
		r.Bytes += int64(d.IOBytes)
		r.Blocks += int64(d.TotalIOs)
		runtimeMs = max(runtimeMs, int64(d.Runtime))
		if j.JobRuntime == nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("fio job %q reports no job_runtime: its CPU time is unknown", j.Name))
		} else {
			rt := float64(*j.JobRuntime)
			r.UserNs += cpuNs(float64(j.UsrCPU), rt)
			r.SysNs += cpuNs(float64(j.SysCPU), rt)
		}
		r.Ctx += int64(j.Ctx)
		r.MajFlt += int64(j.Majf)
		r.MinFlt += int64(j.Minf)
		r.LatMaxNs = max(r.LatMaxNs, int64(d.Lat.Max))
		for k, p := range Percentiles {
			*lat[k] = max(*lat[k], d.Lat.percentile(p))
		}
		if s := j.Sync.Lat; s.N > 0 {
			r.SyncCount += int64(s.N)
			syncNsSum += float64(s.Mean) * float64(s.N)
			r.SyncLatP50Ns = max(r.SyncLatP50Ns, s.percentile(50))
			r.SyncLatP99Ns = max(r.SyncLatP99Ns, s.percentile(99))
			r.SyncLatMaxNs = max(r.SyncLatMaxNs, int64(s.Max))
		}
	}
	if r.SyncCount > 0 {
		r.SyncLatMeanNs = int64(math.Round(syncNsSum / float64(r.SyncCount)))
	}
	r.RuntimeNs = runtimeMs * 1e6
	if r.RuntimeNs > 0 {
		s := float64(r.RuntimeNs) / 1e9
		r.BytesPerS = float64(r.Bytes) / s
		r.IOPS = float64(r.Blocks) / s
	}
	return &r, nil
}

// cpuNs converts fio's CPU percentage of a runtime in milliseconds back to
// the nanoseconds it came from (fio counts CPU in whole milliseconds).
func cpuNs(pct, runtimeMs float64) int64 {
	return int64(math.Round(pct*runtimeMs/100)) * 1e6
}

// fioOutput is the part of fio's JSON output that Parse reads.
type fioOutput struct {
	Version string   `json:"fio version"`
	Jobs    []fioJob `json:"jobs"`
}

type fioJob struct {
	Name       string  `json:"jobname"`
	Error      int     `json:"error"`
	Read       fioDir  `json:"read"`
	Write      fioDir  `json:"write"`
	Sync       fioSync `json:"sync"`
	JobRuntime *num    `json:"job_runtime"` // ms; the sum over jobs with group_reporting
	UsrCPU     num     `json:"usr_cpu"`     // % of job_runtime
	SysCPU     num     `json:"sys_cpu"`
	Ctx        num     `json:"ctx"`
	Majf       num     `json:"majf"`
	Minf       num     `json:"minf"`
}

type fioDir struct {
	IOBytes  num    `json:"io_bytes"`
	TotalIOs num    `json:"total_ios"`
	Runtime  num    `json:"runtime"` // ms; the longest job's with group_reporting
	Lat      fioLat `json:"lat_ns"`
}

// fioSync is a job's "sync" section: its total_ios is 0 in fio 3.33,
// lat_ns.N counts the syncs.
type fioSync struct {
	Lat fioLat `json:"lat_ns"`
}

type fioLat struct {
	N          num            `json:"N"`
	Mean       num            `json:"mean"`
	Max        num            `json:"max"`
	Percentile map[string]num `json:"percentile"`
}

// percentile returns the value fio reported for p ("99.900000"), 0 when
// it reported none.
func (l fioLat) percentile(p float64) int64 {
	for k, v := range l.Percentile {
		if f, err := strconv.ParseFloat(k, 64); err == nil && math.Abs(f-p) < 1e-6 {
			return int64(v)
		}
	}
	return 0
}

// num is a JSON number that fio prints as an integer or a float.
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*n = num(f)
	return nil
}

// jsonStart returns the offset of the first line of out that starts with
// '{', -1 when there is none.
func jsonStart(out []byte) int {
	for off := 0; off < len(out); {
		line := out[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if t := bytes.TrimLeft(line, " \t\r"); len(t) > 0 && t[0] == '{' {
			return off + len(line) - len(t)
		}
		off += len(line)
	}
	return -1
}

// appendLines appends b's non-empty lines, trimmed, to w.
func appendLines(w []string, b []byte) []string {
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimSpace(l); l != "" {
			w = append(w, l)
		}
	}
	return w
}

// excerpt returns ": " and the start of out, for error messages.
func excerpt(out []byte) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return " (it printed nothing)"
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return ": " + strconv.Quote(s)
}
