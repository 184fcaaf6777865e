package netbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/iopath/iopath/internal/netns"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/netio/netresult"
)

// Recovery (Options.Recovery): a run starts with no packet dropped, drops
// the level's share for the window, then none again, and measures how
// long QPS takes to come back.
const (
	// MinRecovery and MaxRecovery bound Options.Recovery.
	MinRecovery = time.Second
	MaxRecovery = time.Minute
	// recoveryBefore is the part of the window before the loss: the QPS
	// to come back to is measured over it.
	recoveryBefore = 3 * time.Second
	// recoveryTimeline is the load child's sampling interval, and
	// recoverySpan the interval whose QPS must be back to
	// recoveredShare of the QPS before the loss.
	recoveryTimeline = 100 * time.Millisecond
	recoverySpan     = 5 // samples: 500 ms
	recoveredShare   = 0.9
)

// recoveryAfter is the part of a recovery window after the loss: the
// time QPS has to come back in.
func recoveryAfter(loss time.Duration) time.Duration { return max(10*time.Second, 2*loss) }

// RecoveryDuration is the measured window of a run with Options.Recovery
// of w: before, the loss, and after.
func RecoveryDuration(w time.Duration) time.Duration { return recoveryBefore + w + recoveryAfter(w) }

// lossWindow drops loss of ns's packets from before after start to
// before+window after it, then none.
type lossWindow struct {
	ns             *netns.NS
	loss           float64
	before, window time.Duration

	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	on, off int64 // CLOCK_MONOTONIC ns the loss began and ended (0: did not)
	err     error
}

// start begins the schedule now, and returns the time it did.
func (lw *lossWindow) start() (int64, error) {
	t0 := metrics.Nanotime()
	lw.quit, lw.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(lw.done)
		if !lw.sleep(t0, lw.before) {
			return
		}
		if lw.err = lw.set(lw.loss); lw.err != nil {
			return
		}
		lw.on = metrics.Nanotime()
		lw.sleep(lw.on, lw.window)
		if lw.err = lw.set(0); lw.err == nil {
			lw.off = metrics.Nanotime()
		}
	}()
	return t0, nil
}

// sleep waits until from+d, false when stopped first.
func (lw *lossWindow) sleep(from int64, d time.Duration) bool {
	t := time.NewTimer(time.Duration(from + int64(d) - metrics.Nanotime()))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-lw.quit:
		return false
	}
}

func (lw *lossWindow) set(loss float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return lw.ns.SetLoss(ctx, loss)
}

// stop ends the schedule (the loss is off after it, whatever happened)
// and returns the time it did. It may be called more than once, and
// before start.
func (lw *lossWindow) stop() (int64, error) {
	lw.once.Do(func() {
		if lw.quit == nil {
			return
		}
		close(lw.quit)
		<-lw.done
		if lw.on != 0 && lw.off == 0 {
			if err := lw.set(0); lw.err == nil {
				lw.err = err
			}
		}
	})
	return metrics.Nanotime(), lw.err
}

// timelineQPS is the rate over samples [from, to) of a timeline of
// samples of b ns each.
func timelineQPS(timeline []int64, b int64, from, to int) float64 {
	var n int64
	for _, k := range timeline[from:to] {
		n += k
	}
	return float64(n) / (float64(int64(to-from)*b) / 1e9)
}

// recoveryOf fills r's recovery figures from res's timeline and the
// times the loss began and ended (CLOCK_MONOTONIC ns).
func recoveryOf(r *netresult.Run, res *netresult.Load, on, off int64) error {
	b := int64(res.TimelineNs)
	if b <= 0 || len(res.Timeline) == 0 || on == 0 || off == 0 {
		return errors.New("recovery: the load generator kept no timeline, or the loss never began and ended")
	}
	start := res.WindowStartNs
	qps := func(from, to int) float64 { return timelineQPS(res.Timeline, b, from, to) }
	// Samples wholly before the loss, wholly within it, and the first
	// one that starts after it.
	nBefore := int(max(0, (on-start)/b))
	i0 := int((on - start + b - 1) / b)
	i1 := int((off - start) / b)
	j0 := int((off - start + b - 1) / b)
	if i1 <= i0 {
		// Shorter than a sample (a server restarted in 80 ms): the
		// samples it touches.
		i0, i1 = nBefore, j0
	}
	if nBefore < recoverySpan || i1 <= i0 || j0 >= len(res.Timeline) {
		return fmt.Errorf("recovery: a timeline of %d samples of %v does not cover the loss (%v after the start, for %v)",
			len(res.Timeline), res.TimelineNs, time.Duration(on-start), time.Duration(off-on))
	}
	r.QPSBefore = qps(0, nBefore)
	r.QPSDuring = qps(i0, i1)
	r.Timeline, r.TimelineNs = res.Timeline, b
	r.DisruptOnNs, r.DisruptOffNs = on-start, off-start
	for j := j0; j+recoverySpan <= len(res.Timeline); j++ {
		if qps(j, j+recoverySpan) >= recoveredShare*r.QPSBefore {
			r.Recovered = true
			r.RecoveryNs = max(0, start+int64(j)*b-off)
			return nil
		}
	}
	return nil
}
