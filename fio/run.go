package fio

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// ErrNotRegular is returned (inside an *fs.PathError) when the job's file
// is a directory, device, FIFO or socket: iopath reads regular files only.
// It is the one such value of every package (iopath.ErrNotRegular,
// engine.ErrNotRegular, ...: see internal/sys).
var ErrNotRegular = sys.ErrNotRegular

// killGrace is how long a cancelled fio has to stop its jobs and exit
// before they are killed. fio obeys SIGTERM within milliseconds when it
// does at all (on a starved machine a job was seen running on), and an
// interrupted iopath must have stopped, children included, within a
// second; fio's output is not wanted after a cancel anyway.
var killGrace = 200 * time.Millisecond

// Run runs fio for job and parses its output. It first checks that the
// file exists, is a regular file and holds job.PassBytes bytes (a write
// job's: exactly job.FileSize bytes), so that fio never gets a chance to
// create, extend or replace it, and that this fio can run job faithfully
// (info.Check).
//
// Cancelling ctx stops fio and its job processes (SIGTERM, which fio obeys
// within milliseconds, SIGKILL killGrace later), and Run returns ctx's
// error. Other errors name fio, the file and fio's last line on stderr.
func Run(ctx context.Context, info Info, job Job) (*Result, error) {
	args, err := job.Args()
	if err != nil {
		return nil, fmt.Errorf("fio: %w", err)
	}
	if err := checkFile(job); err != nil {
		return nil, err
	}
	if err := info.Check(job); err != nil {
		return nil, fmt.Errorf("fio: %w", err)
	}
	twin := job.IOEngine()

	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, info.Path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// fio forks one process per job, each in a session of its own
	// (setsid), so neither a process group nor killing fio reaches them:
	// a SIGKILLed fio leaves its jobs reading until their runtime ends.
	// SIGTERM makes fio tell every job to stop, reap them and exit (within
	// milliseconds); if it has not after killGrace, its children and then
	// fio itself are killed.
	var mu sync.Mutex
	var escalate *time.Timer
	cmd.Cancel = func() error {
		p := cmd.Process
		mu.Lock()
		escalate = time.AfterFunc(killGrace, func() {
			killChildren(p.Pid)
			p.Kill()
		})
		mu.Unlock()
		return p.Signal(syscall.SIGTERM)
	}
	cmd.WaitDelay = killGrace + 2*time.Second // then give up on fio's pipes
	// If this process dies without cancelling (a second Ctrl-C, SIGKILL),
	// the kernel sends fio the same SIGTERM, and fio stops its jobs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	runErr := cmd.Run()
	mu.Lock()
	if escalate != nil {
		escalate.Stop()
	}
	mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fio %s on %s: %w", twin, job.Path, err)
	}
	res, parseErr := Parse(stdout.Bytes())
	if runErr != nil {
		detail := lastLine(stderr.Bytes())
		if detail == "" && parseErr == nil {
			detail = ": " + runErr.Error()
		} else if detail == "" {
			detail = ": " + parseErr.Error()
		}
		return nil, fmt.Errorf("fio (%s) %s on %s failed: %v%s", info.Path, twin, job.Path, runErr, detail)
	}
	if parseErr != nil {
		return nil, fmt.Errorf("fio (%s) %s on %s: %w%s", info.Path, twin, job.Path, parseErr, lastLine(stderr.Bytes()))
	}
	if res.Bytes == 0 {
		did := "read"
		if job.Write {
			did = "wrote"
		}
		return nil, fmt.Errorf("fio (%s) %s on %s %s nothing%s", info.Path, twin, job.Path, did, lastLine(stderr.Bytes()))
	}
	if res.Write != job.Write {
		side := map[bool]string{false: "read", true: "write"}
		return nil, fmt.Errorf("fio (%s) %s on %s reported %s figures for a %s job",
			info.Path, twin, job.Path, side[res.Write], side[job.Write])
	}
	res.Warnings = appendLines(res.Warnings, stderr.Bytes())
	res.Command = append([]string{info.Path}, args...)
	res.PassBytes = job.PassBytes()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.ProcessUserNs = ru.Utime.Nano()
		res.ProcessSysNs = ru.Stime.Nano()
	}
	return res, nil
}

// checkFile makes sure fio will only read job.Path, or for a write job
// write within it: with a size larger than the file, fio lays the file out
// again (unlinking it first), and with a missing file it would create
// one. --readonly and --allow_file_create=0 forbid both for reads;
// --create_on_open=1 stops the layout of a write job's file (fio then
// writes past its end instead), and the exact size checked here stops
// that. This says so clearly beforehand.
func checkFile(job Job) error {
	st, err := os.Stat(job.Path)
	if err != nil {
		return fmt.Errorf("fio: %w", err)
	}
	if !st.Mode().IsRegular() {
		op := "read"
		if job.Write {
			op = "write"
		}
		return fmt.Errorf("fio: %w", &fs.PathError{Op: op, Path: job.Path, Err: ErrNotRegular})
	}
	if job.Write {
		if st.Size() != job.FileSize {
			return fmt.Errorf("fio: %s is %d bytes, not the %d the write job was made for "+
				"(a twin writes over a file laid out beforehand, and never changes its size)",
				job.Path, st.Size(), job.FileSize)
		}
		return nil
	}
	if need := job.PassBytes(); st.Size() < need {
		return fmt.Errorf("fio: %s is %d bytes, shorter than the %d the job reads (was it truncated?)",
			job.Path, st.Size(), need)
	}
	return nil
}

// killChildren SIGKILLs the processes whose parent is pid (fio's job
// processes). It runs before Run's Wait has reaped fio (the timer that
// calls it is stopped then), so pid still names fio.
func killChildren(pid int) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if child, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			syscall.Kill(child, syscall.SIGKILL)
		}
	}
}
