package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iopath/iopath/bench"
)

// How the process stops (the whole policy is here; main and the test
// binary's TestMain both go through mainCode, as does a benchmark child):
//
//   - The first SIGINT, SIGTERM or SIGHUP cancels the command's context,
//     with interrupted as its cause. Every command then stops its work,
//     removes its temporary files, kills its children and returns, in
//     tens of milliseconds.
//   - A second signal ends the process at once.
//   - So does the command still running stopGrace after the first signal:
//     some waits cannot be cut short (a write(2) to a pipe whose reader has
//     stopped reading, say), and the promise is to stop within a second.
//
// Ending at once runs the cleanup set first (cleanups: the temporary
// files the commands registered), then prints one line and exits with
// 128+N for signal N, as shells report a process killed by a signal (130
// for Ctrl-C). A command that returns an error after an interrupt exits
// with the same status, its message saying "interrupted" where a package
// below said "context canceled"; one that returns nil (net serve, which
// drains on the signal) exits 0.

// stopGrace is how long main lets a command stop by itself after the first
// signal before it ends the process. The commands stop in far less (tens
// of milliseconds); what is left to the second is cleanup that is already
// bounded, and the time to be scheduled on a busy machine.
var stopGrace = defaultStopGrace

const defaultStopGrace = 700 * time.Millisecond

// signalEcho is how soon after the first signal another one is taken for
// the same one: when Ctrl-C reaches the process group just as a child is
// being started, Go's signal handling in this process can report the one
// SIGINT twice, tens to hundreds of microseconds apart (measured on Linux
// 6.18, Go 1.26: the kernel traced one signal_generate for this process).
// A person's second Ctrl-C comes much later; one that came sooner is still
// ended by stopGrace.
var signalEcho = 100 * time.Millisecond

// signalLate is how long a command that failed waits for a signal that
// may have caused the failure (see mainCode).
var signalLate = 50 * time.Millisecond

// interrupted is the cause of the command context's cancellation when a
// signal stopped the command.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted" }

// exitStatus is the conventional status of a process stopped by e.sig.
func (e interrupted) exitStatus() int { return 128 + int(e.sig) }

// stopSignals are the signals that stop a command.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// mainCode runs the program with args (a benchmark child when bench says
// this process is one) and returns the exit status, having printed at most
// one line on stderr. It may instead end the process itself, after a second
// signal or when the command does not stop in time.
func mainCode(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	p := &process{name: "bench child", stderr: stderr, exit: os.Exit, cancel: cancel, done: make(chan struct{})}
	if !bench.IsChild() {
		p.name = commandName(args)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...)
	go p.watch(sigs)

	var err error
	if bench.IsChild() {
		// A benchmark child: one measurement, asked for on stdin.
		err = bench.ChildMain(ctx, stdin, stdout)
	} else {
		err = run(ctx, args, stdin, stdout, stderr)
	}
	awaitLateSignal(ctx, err)
	close(p.done)
	var cause interrupted
	if !errors.As(context.Cause(ctx), &cause) {
		cause = interrupted{}
	}
	return p.finish(err, cause)
}

// awaitLateSignal waits up to signalLate for the watcher to cancel ctx
// when the command failed (err) before any signal was seen. A Ctrl-C
// reaches the whole process group: a child can die of it, and fail the
// command, before the watcher here has the signal; the exit must then
// say interrupted (130), not failed (1).
func awaitLateSignal(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	t := time.NewTimer(signalLate)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// process is the state mainCode shares with its signal watcher.
type process struct {
	name   string // the command, for the forced line ("bench", "net serve")
	stderr io.Writer
	exit   func(int) // os.Exit
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the command has returned

	// exitMu is taken, and never given back, by whichever of the command's
	// return and the watcher's forced exit comes first: it alone prints
	// the last line.
	exitMu sync.Mutex
}

// watch waits for the first signal and cancels the command; then for a
// second signal or stopGrace, whichever comes first, and ends the process
// unless the command has returned by then.
func (p *process) watch(sigs <-chan os.Signal) {
	var sig syscall.Signal
	select {
	case s := <-sigs:
		sig = s.(syscall.Signal)
	case <-p.done:
		return
	}
	first := time.Now()
	p.cancel(interrupted{sig})
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	var why string
	for why == "" {
		select {
		case <-sigs:
			if time.Since(first) < signalEcho {
				continue
			}
			why = "stopped at once on a second signal"
		case <-t.C:
			why = fmt.Sprintf("did not stop within %v; stopped at once", stopGrace)
		case <-p.done:
			return
		}
	}
	p.exitMu.Lock()
	cleanups.run()
	fmt.Fprintf(p.stderr, "iopath: %s\n", oneLine(p.name+": interrupted ("+why+")"))
	p.exit(interrupted{sig}.exitStatus())
}

// finish prints err as one line and returns the exit status: 0 for
// success, 2 for bad usage, 128+N after signal N stopped the command, 1
// for any other failure. An error that is the interrupt's cancellation
// ("context canceled", from any package down the line) says "interrupted".
func (p *process) finish(err error, cause interrupted) int {
	p.exitMu.Lock() // never unlocked: the process ends with this status
	cleanups.run()
	if err == nil {
		return 0
	}
	if cause.sig == 0 {
		return exitCode(err, p.stderr)
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		if msg == context.Canceled.Error() {
			msg = p.name + ": " + cause.Error()
		} else {
			msg = strings.ReplaceAll(msg, context.Canceled.Error(), cause.Error())
		}
	}
	fmt.Fprintf(p.stderr, "iopath: %s\n", oneLine(msg))
	return cause.exitStatus()
}

// commandName is the command args run ("bench", "net serve"), for messages
// printed when it cannot say so itself; "iopath" when args name none.
func commandName(args []string) string {
	c, _, err := newRootCmd(strings.NewReader(""), io.Discard, io.Discard).Find(args)
	if err != nil || c == nil || !c.HasParent() {
		return "iopath"
	}
	return strings.TrimPrefix(c.CommandPath(), "iopath ")
}
