package iopath

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/wal"
)

// The crash test: a child process appends from several goroutines and
// reports each acknowledged record to the parent over a pipe as it is
// acknowledged; the parent SIGKILLs it at a random moment, opens the log
// again (which cuts a torn tail) and checks that every acknowledged record
// is there, intact, and in order per writer, with at most records that
// were never acknowledged dropped from the end.
//
// SIGKILL does not lose what is in the page cache, so this proves the
// protocol (framing, ordering, no acknowledgement before the write and
// fdatasync completed, recovery), not durability across a power loss.
// For the torn writes a power loss leaves, a quarter of the trials are
// "torn": the child's commit hook writes only a prefix of a batch, some
// of it zeros (blocks ext4 allocated but never wrote), and then the
// child kills itself, before any of that batch is acknowledged.

// The child's environment.
const (
	crashPathEnv   = "IOPATH_TEST_LOG_CRASH_PATH" // the log; set only in the child
	crashEngineEnv = "IOPATH_TEST_LOG_CRASH_ENGINE"
	crashBaseEnv   = "IOPATH_TEST_LOG_CRASH_BASE"  // the first writer id
	crashBatchEnv  = "IOPATH_TEST_LOG_CRASH_BATCH" // WithBatchBytes, 0: default
	crashTearEnv   = "IOPATH_TEST_LOG_CRASH_TEAR"  // the commit to tear (1-based), 0: none
	crashSeedEnv   = "IOPATH_TEST_LOG_CRASH_SEED"
)

// crashWriters is the goroutines appending in each child.
const crashWriters = 8

// crashTrials is the trials per engine; crashParallel of them run at
// once, each on its own log file, which trialsPerLog trials in a row
// share (each opens what the one before left).
const (
	crashTrials   = 100
	crashParallel = 4
	trialsPerLog  = 5
)

// crashRecord is writer id's record seq: 16 to 12,015 bytes (two in
// three over 4 KiB), starting with id and seq.
func crashRecord(id, seq int) []byte {
	n := 16 + (id*7717+seq*7919)%12000
	b := make([]byte, n)
	for j := 16; j < n; j++ {
		b[j] = byte(id*31 + seq*17 + j)
	}
	binary.LittleEndian.PutUint64(b, uint64(id))
	binary.LittleEndian.PutUint64(b[8:], uint64(seq))
	return b
}

func TestLogCrash(t *testing.T) {
	trials := crashTrials
	if testing.Short() {
		trials = 20 // CI runs the full count (it does not use -short)
	}
	for _, e := range logEngines(t) {
		t.Run(e, func(t *testing.T) {
			t.Parallel() // the engines' trials share the machine's two minutes
			start := time.Now()
			var mu sync.Mutex
			var total crashStats
			var wg sync.WaitGroup
			next := make(chan int, trials)
			for i := range trials {
				next <- i
			}
			close(next)
			for range crashParallel {
				wg.Go(func() {
					var path string
					counts := map[int]int{} // records per writer id in the log, as verified
					for trial := range next {
						if trial%trialsPerLog == 0 || path == "" {
							path = filepath.Join(t.TempDir(), "wal")
							clear(counts)
						}
						s, err := crashTrial(path, e, trial, counts)
						if err != nil {
							t.Errorf("trial %d (%s): %v", trial, path, err)
							return
						}
						mu.Lock()
						total.add(s)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			t.Logf("%s: %d trials (%d torn, %d of which tore a batch before SIGKILL came) in %v: %d records acknowledged, "+
				"%d found after the crashes; torn tails cut in %d trials (%d bytes); OpenLog after a crash took up to %v",
				e, total.trials, total.torn, total.tore, time.Since(start).Round(time.Millisecond),
				total.acked, total.found, total.cut, total.cutBytes, total.maxOpen.Round(time.Microsecond))
			if total.acked == 0 {
				t.Errorf("no record was acknowledged in %d trials: the children did nothing", total.trials)
			}
		})
	}
}

// crashStats sums the trials.
type crashStats struct {
	trials, torn, tore, cut int
	acked, found            int
	cutBytes                int64
	maxOpen                 time.Duration // the longest OpenLog after a crash
}

func (s *crashStats) add(o crashStats) {
	s.trials += o.trials
	s.torn += o.torn
	s.tore += o.tore
	s.maxOpen = max(s.maxOpen, o.maxOpen)
	s.cut += o.cut
	s.acked += o.acked
	s.found += o.found
	s.cutBytes += o.cutBytes
}

// crashTrial runs one child on the log at path, kills it, and checks the
// log. counts holds the records each writer id of earlier trials has in
// the log; it is updated.
func crashTrial(path, engine string, trial int, counts map[int]int) (crashStats, error) {
	rng := rand.New(rand.NewPCG(uint64(trial), 0x10c))
	s := crashStats{trials: 1}
	base := trial * crashWriters
	tear := 0
	if rng.IntN(4) == 0 {
		tear = 1 + rng.IntN(12)
		s.torn = 1
	}
	batch := 0
	if rng.IntN(3) == 0 {
		batch = 16 << 10 // small commits: a record over it goes alone
	}
	r, w, err := os.Pipe()
	if err != nil {
		return s, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		crashPathEnv+"="+path, crashEngineEnv+"="+engine, crashBaseEnv+"="+strconv.Itoa(base),
		crashBatchEnv+"="+strconv.Itoa(batch), crashTearEnv+"="+strconv.Itoa(tear), crashSeedEnv+"="+strconv.Itoa(trial))
	cmd.ExtraFiles = []*os.File{w} // the child's fd 3: acknowledgements
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return s, err
	}
	w.Close()
	ready := make(chan struct{})
	acked := map[int]int{} // the highest acknowledged seq per writer id
	var childErr string
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "ready":
				if !sent {
					close(ready)
					sent = true
				}
			case strings.HasPrefix(line, "error "):
				childErr = line
			case line == "tear":
				s.tore = 1
			default:
				var id, seq int
				if _, err := fmt.Sscanf(line, "%d %d", &id, &seq); err != nil {
					childErr = "bad line " + strconv.Quote(line)
					continue
				}
				if prev, ok := acked[id]; ok && seq != prev+1 || !ok && seq != 0 {
					childErr = fmt.Sprintf("writer %d acknowledged %d after %d", id, seq, prev)
				}
				acked[id] = seq
			}
		}
		if !sent {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
	}
	time.Sleep(time.Duration(5+rng.IntN(76)) * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL) // the torn child may have killed itself already
	werr := cmd.Wait()
	<-lines
	r.Close()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return s, fmt.Errorf("the child did not die of SIGKILL (%v): %s", werr, stderr.String())
	}
	if childErr != "" {
		return s, fmt.Errorf("the child: %s\n%s", childErr, stderr.String())
	}
	for _, seq := range acked {
		s.acked += seq + 1
	}

	// Open the log again, as a program would after the crash. (After
	// io_uring, it may wait for the dead child's requests to end: see
	// wal.LockWait.)
	opened := time.Now()
	l, err := OpenLog(path, WithEngine(engine))
	if err != nil {
		return s, fmt.Errorf("OpenLog after the crash: %w", err)
	}
	s.maxOpen = time.Since(opened)
	if cut := l.Stats().Truncated; cut > 0 {
		s.cut, s.cutBytes = 1, cut
	}
	next := map[int]int{}
	err = l.Replay(func(rec []byte) error {
		if len(rec) < 16 {
			return fmt.Errorf("a record of %d bytes", len(rec))
		}
		id, seq := int(binary.LittleEndian.Uint64(rec)), int(binary.LittleEndian.Uint64(rec[8:]))
		if id < 0 || id >= base+crashWriters || seq < 0 || !bytes.Equal(rec, crashRecord(id, seq)) {
			return fmt.Errorf("a damaged record (%d bytes, writer %d, seq %d)", len(rec), id, seq)
		}
		if seq != next[id] {
			return fmt.Errorf("writer %d: seq %d where %d was due (a gap, a duplicate or out of order)", id, seq, next[id])
		}
		next[id]++
		return nil
	})
	cerr := l.Close()
	if err != nil {
		return s, fmt.Errorf("Replay after the crash: %w", err)
	}
	if cerr != nil {
		return s, cerr
	}
	for id, seq := range acked {
		if next[id] <= seq {
			return s, fmt.Errorf("writer %d: seq %d was acknowledged, the log has %d records of it", id, seq, next[id])
		}
	}
	for id, n := range next {
		if id < base {
			if counts[id] != n {
				return s, fmt.Errorf("writer %d of an earlier trial: %d records, %d before this trial", id, n, counts[id])
			}
			continue
		}
		counts[id] = n
		s.found += n
	}
	return s, nil
}

// TestLogCrashChild is the child of TestLogCrash.
func TestLogCrashChild(t *testing.T) {
	path := os.Getenv(crashPathEnv)
	if path == "" {
		t.Skip("the child half of TestLogCrash: runs only in its child process")
	}
	acks := os.NewFile(3, "acks")
	fail := func(err error) {
		acks.Write(fmt.Appendf(nil, "error %v\n", err))
		t.Fatal(err)
	}
	base, _ := strconv.Atoi(os.Getenv(crashBaseEnv))
	batch, _ := strconv.Atoi(os.Getenv(crashBatchEnv))
	tear, _ := strconv.Atoi(os.Getenv(crashTearEnv))
	seed, _ := strconv.Atoi(os.Getenv(crashSeedEnv))
	opts := []Option{WithEngine(os.Getenv(crashEngineEnv))}
	if batch > 0 {
		opts = append(opts, WithBatchBytes(batch))
	}
	if tear > 0 {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x7ea2))
		var mu sync.Mutex
		commits := 0
		wal.TestHookCommit = func(_ string, fd int, b []byte, off int64) (bool, error) {
			mu.Lock()
			commits++
			if commits < tear {
				mu.Unlock()
				return false, nil
			}
			// What a power loss may leave of this commit: a prefix,
			// with a block of it zeros (written out of order).
			torn := bytes.Clone(b[:rng.IntN(len(b))])
			if len(torn) > 0 && rng.IntN(2) == 0 {
				at := rng.IntN(len(torn))
				clear(torn[at:min(len(torn), at+4096)])
			}
			sys.Pwrite(fd, torn, off)
			acks.Write([]byte("tear\n"))
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never acknowledged
		}
	}
	l, err := OpenLog(path, opts...)
	if err != nil {
		fail(err)
	}
	acks.Write([]byte("ready\n"))
	for w := range crashWriters {
		go func() {
			id := base + w
			for seq := 0; ; seq++ {
				if err := l.Append(context.Background(), crashRecord(id, seq)); err != nil {
					acks.Write(fmt.Appendf(nil, "error writer %d seq %d: %v\n", id, seq, err))
					return
				}
				// One write(2) per acknowledgement, as it happens: a
				// line to a pipe is written whole (under PIPE_BUF).
				acks.Write(fmt.Appendf(nil, "%d %d\n", id, seq))
			}
		}()
	}
	time.Sleep(time.Minute)
	t.Fatal("not killed within a minute")
}
