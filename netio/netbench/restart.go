package netbench

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/iopath/iopath/metrics"
)

// Restart (Options.Restart): each run's server is stopped RestartBefore
// into the measured window (SIGTERM: it drains for at most 300 ms and
// closes its connections) and started again at once on the same port;
// the load generator's connections fail, and reconnect as
// Options.Reconnect says. The run reports the QPS before and during the
// outage and how long QPS took, after the new server listened, to come
// back to 90% of its level before (as --recovery does for loss).
const RestartBefore = 3 * time.Second

// RestartDuration is the measured window of a run with Options.Restart:
// before the restart and 10 s after.
const RestartDuration = RestartBefore + 10*time.Second

// restartWindow restarts s before into the window (the window handshake's
// on), keeping the new server for the bench to take (stop).
type restartWindow struct {
	o      *Options
	s      *server
	cpus   []int
	before time.Duration

	quit, done chan struct{}
	once       sync.Once
	next       *server // the new server, once started
	down, up   int64   // CLOCK_MONOTONIC ns: the stop began, the new server listened
	err        error
}

func (rw *restartWindow) start() (int64, error) {
	t0 := metrics.Nanotime()
	rw.quit, rw.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(rw.done)
		t := time.NewTimer(rw.before)
		defer t.Stop()
		select {
		case <-t.C:
		case <-rw.quit:
			return
		}
		rw.down = metrics.Nanotime()
		rw.s.stop(context.Background()) // the old process drains and exits
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rw.next, rw.err = relaunch(ctx, rw.o, rw.s, rw.cpus)
		if rw.err == nil {
			rw.up = metrics.Nanotime()
		}
	}()
	return t0, nil
}

// stop waits for a restart under way to finish; it may be called more
// than once, and before start.
func (rw *restartWindow) stop() (int64, error) {
	rw.once.Do(func() {
		if rw.quit != nil {
			close(rw.quit)
			<-rw.done
		}
	})
	return metrics.Nanotime(), rw.err
}

// relaunch starts s's engine again on s's address (its port), as
// startServer did.
func relaunch(ctx context.Context, o *Options, s *server, cpus []int) (*server, error) {
	loops := serverLoops(cpus)
	args := append([]string{"net", "serve", "-e", s.engine, "--addr", s.addr,
		"--max-conns", strconv.Itoa(s.maxConns)}, loopsArgs(s.engine, loops)...)
	cmd := o.Command(args...)
	cmd.Env = serverEnv(s.engine, loops)
	ns, err := launch(ctx, cmd, s.engine, s.engine+" server, restarted", cpus)
	if err != nil {
		return nil, err
	}
	ns.maxConns, ns.runs = s.maxConns, s.runs
	return ns, nil
}
