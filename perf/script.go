package perf

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// Frame is one function in a call stack.
type Frame struct {
	Func   string // the symbol, "[unknown]" when perf could not name it
	DSO    string // the binary or library it is in; "[kernel.kallsyms]" for the kernel
	Kernel bool
}

// Sample is one perf sample: where a thread was when the timer fired.
type Sample struct {
	Comm   string // the thread's name: iopath, iou-wrk-123, iou-sqp-123...
	TID    int
	Time   int64 // CLOCK_MONOTONIC, ns
	Period int64 // ns of CPU this sample stands for
	// Stack holds indexes into Samples.Frames, the leaf first.
	Stack []int32
}

// Samples is a recording, read.
type Samples struct {
	Frames []Frame
	List   []Sample
	index  map[Frame]int32
}

// Script reads perf.data through perf script. --no-inline keeps perf from
// running addr2line on every address (minutes on a Go binary); Go's
// inlined calls then show as their caller, as in pprof's own profiles.
func Script(ctx context.Context, perfPath, data string) (*Samples, error) {
	cmd := exec.CommandContext(ctx, perfPath, "script", "-i", data, "--ns", "--no-inline",
		"-F", "comm,tid,time,period,ip,sym,dso")
	var stderr tail
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	s, perr := parse(out, (&goSymbols{}).name)
	if perr != nil {
		io.Copy(io.Discard, out)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("perf script: %v%s", err, firstLine([]byte(stderr.String())))
	}
	if perr != nil {
		return nil, perr
	}
	return s, nil
}

// Parse reads perf script's output with the fields comm, tid, time,
// period, ip, sym and dso: a header line per sample, then one line per
// frame, leaf first, then a blank line.
func Parse(r io.Reader) (*Samples, error) { return parse(r, nil) }

// parse is Parse, naming the user frames perf could not with resolve
// (the DSO's path and the frame's offset in it), when given.
func parse(r io.Reader, resolve func(dso string, off uint64) (string, bool)) (*Samples, error) {
	s := &Samples{index: map[Frame]int32{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cur *Sample
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			cur = nil
			continue
		}
		if b[0] == ' ' || b[0] == '\t' {
			if cur == nil {
				return nil, fmt.Errorf("perf script line %d: a frame outside a sample: %q", line, b)
			}
			f, addr, ok := parseFrame(string(bytes.TrimSpace(b)))
			if !ok {
				return nil, fmt.Errorf("perf script line %d: not a frame: %q", line, b)
			}
			if f.Func == "[unknown]" && !f.Kernel && resolve != nil && strings.HasPrefix(f.DSO, "/") {
				if name, ok := resolve(f.DSO, addr); ok {
					f.Func = name
				}
			}
			cur.Stack = append(cur.Stack, s.frame(f))
			continue
		}
		smp, ok := parseHeader(string(b))
		if !ok {
			return nil, fmt.Errorf("perf script line %d: not a sample: %q", line, b)
		}
		s.List = append(s.List, smp)
		cur = &s.List[len(s.List)-1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	return s, nil
}

func (s *Samples) frame(f Frame) int32 {
	if i, ok := s.index[f]; ok {
		return i
	}
	i := int32(len(s.Frames))
	s.Frames = append(s.Frames, f)
	s.index[f] = i
	return i
}

// parseHeader parses "COMM TID SECONDS.NANOS: PERIOD" (COMM may hold
// spaces, so the numbers are taken from the right).
func parseHeader(l string) (Sample, bool) {
	f := strings.Fields(l)
	if len(f) < 4 {
		return Sample{}, false
	}
	n := len(f)
	period, err := strconv.ParseInt(f[n-1], 10, 64)
	if err != nil {
		return Sample{}, false
	}
	ts, ok := strings.CutSuffix(f[n-2], ":")
	if !ok {
		return Sample{}, false
	}
	sec, frac, ok := strings.Cut(ts, ".")
	if !ok || len(frac) != 9 {
		return Sample{}, false
	}
	secs, err1 := strconv.ParseInt(sec, 10, 64)
	ns, err2 := strconv.ParseInt(frac, 10, 64)
	tid, err3 := strconv.Atoi(f[n-3])
	if err1 != nil || err2 != nil || err3 != nil {
		return Sample{}, false
	}
	return Sample{Comm: strings.Join(f[:n-3], " "), TID: tid, Time: secs*1e9 + ns, Period: period}, true
}

// parseFrame parses "ADDR SYMBOL (DSO)"; the symbol may hold spaces and
// parentheses (Go's method names do), the DSO is the last parenthesis.
func parseFrame(l string) (Frame, uint64, bool) {
	addr, rest, ok := strings.Cut(l, " ")
	if !ok {
		return Frame{}, 0, false
	}
	ip, err := strconv.ParseUint(addr, 16, 64)
	if err != nil {
		return Frame{}, 0, false
	}
	rest = strings.TrimSpace(rest)
	i := strings.LastIndex(rest, " (")
	if i < 0 || !strings.HasSuffix(rest, ")") {
		if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
			i = -1 // no symbol at all: "(DSO)"
		} else {
			return Frame{}, 0, false
		}
	}
	var sym, dso string
	if i < 0 {
		sym, dso = "[unknown]", rest[1:len(rest)-1]
	} else {
		sym, dso = strings.TrimSpace(rest[:i]), rest[i+2:len(rest)-1]
	}
	if sym == "" {
		sym = "[unknown]"
	}
	kernel := strings.HasPrefix(dso, "[kernel") || strings.HasPrefix(dso, "[guest.kernel") || (strings.HasPrefix(addr, "ffff") && len(addr) == 16)
	return Frame{Func: sym, DSO: dso, Kernel: kernel}, ip, true
}

// Window returns the samples taken in [from, to] (CLOCK_MONOTONIC ns),
// sharing s's frames.
func (s *Samples) Window(from, to int64) *Samples {
	w := &Samples{Frames: s.Frames, index: s.index}
	for _, smp := range s.List {
		if smp.Time >= from && smp.Time <= to {
			w.List = append(w.List, smp)
		}
	}
	return w
}

// CPU is the CPU time the samples stand for, in ns.
func (s *Samples) CPU() int64 {
	var t int64
	for _, smp := range s.List {
		t += smp.Period
	}
	return t
}
