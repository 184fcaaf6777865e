package netbench

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// --- the handshake of the measured window

// WindowSyncFlag is the hidden flag of `iopath net load` that Bench adds
// when it records the server: the child then calls the function
// WindowSync makes at the start and the end of its measured window.
const WindowSyncFlag = "--window-sync"

// Lines of the handshake.
const (
	syncStart = "start"
	syncEnd   = "end"
	syncGo    = "go"
)

// WindowSync is the load child's half of the handshake (WindowSyncFlag):
// it returns a load.Config.Progress that calls next (when set) and, at
// the end of the phase before the window ("warmup", or "dial" without a
// warm-up) and at the end of the window ("run"), writes a line on file
// descriptor 3 and waits for the bench's answer on stdin. A bench that is
// gone (a write or read that fails) is not waited for; without a pipe on
// descriptor 3 (the flag given by hand) it returns next.
func WindowSync(warmup time.Duration, next func(phase string, done, total int)) func(phase string, done, total int) {
	// Checked before an *os.File owns it: that file's finalizer would
	// close a descriptor 3 the runtime may be using.
	var st syscall.Stat_t
	if err := syscall.Fstat(3, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return next
	}
	marks := os.NewFile(3, "window-sync")
	answers := bufio.NewReader(os.Stdin)
	before := "dial"
	if warmup > 0 {
		before = "warmup"
	}
	var started, ended, broken bool
	say := func(what string) {
		if broken {
			return
		}
		if _, err := io.WriteString(marks, what+"\n"); err != nil {
			broken = true
			return
		}
		if _, err := answers.ReadString('\n'); err != nil {
			broken = true
		}
	}
	return func(phase string, done, total int) {
		if next != nil {
			next(phase, done, total)
		}
		if done < total {
			return
		}
		switch {
		case phase == before && !started:
			started = true
			say(syncStart)
		case phase == "run" && started && !ended:
			ended = true
			say(syncEnd)
		}
	}
}

// windowSync is the bench's half: it calls on and off as the load child
// cmd says its window starts and ends (perf's recording switched on and
// off, the loss of --recovery scheduled), and keeps the window: the
// CLOCK_MONOTONIC times on and off return.
type windowSync struct {
	on, off          func() (int64, error)
	marks, answers   *os.File // the bench's ends
	childW, childR   *os.File // the child's ends, closed once it has started
	done             chan struct{}
	t0, t1           int64
	enabled, stopped bool
	err              error
}

// newWindowSync gives cmd (not started) the two pipes of the handshake.
func newWindowSync(cmd *exec.Cmd, on, off func() (int64, error)) (*windowSync, error) {
	w := &windowSync{on: on, off: off, done: make(chan struct{})}
	var err error
	if w.marks, w.childW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if w.childR, w.answers, err = os.Pipe(); err != nil {
		w.marks.Close()
		w.childW.Close()
		return nil, err
	}
	cmd.Stdin = w.childR
	cmd.ExtraFiles = []*os.File{w.childW}
	return w, nil
}

// started closes the child's ends (they are the child's now) and serves
// the handshake until the child closes its end; abort, when the child
// did not start.
func (w *windowSync) started() {
	w.childW.Close()
	w.childR.Close()
	go w.serve()
}

func (w *windowSync) abort() {
	for _, f := range []*os.File{w.marks, w.answers, w.childW, w.childR} {
		f.Close()
	}
}

func (w *windowSync) serve() {
	defer close(w.done)
	defer w.marks.Close()
	defer w.answers.Close()
	sc := bufio.NewScanner(w.marks)
	for sc.Scan() {
		switch sc.Text() {
		case syncStart:
			if !w.enabled && w.err == nil {
				w.t0, w.err = w.on()
				w.enabled = w.err == nil
			}
		case syncEnd:
			w.switchOff()
		}
		// The child goes on whatever happened: a run is not lost for
		// want of its profile.
		io.WriteString(w.answers, syncGo+"\n")
	}
}

// switchOff calls off if on was called and off was not.
func (w *windowSync) switchOff() {
	if w.enabled && !w.stopped {
		w.stopped = true
		var err error
		w.t1, err = w.off()
		if w.err == nil {
			w.err = err
		}
	}
}

// wait waits for the child's end of the handshake (the child has exited)
// and switches sampling off if the child did not say the window ended
// (all its connections gone, say). It returns the window.
func (w *windowSync) wait() span {
	<-w.done
	ended := w.stopped
	w.switchOff()
	sp := span{t0: w.t0, t1: w.t1, err: w.err, perfFailed: w.err != nil}
	switch {
	case sp.err != nil:
	case !w.enabled:
		sp.err = errors.New("the load generator never reached its measured window")
	case !ended:
		sp.err = errors.New("the load generator did not say where its window ended")
	default:
		sp.on = true
	}
	return sp
}
