package netbench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/internal/netns"
	"github.com/iopath/iopath/netio/netresult"
)

// LossyFlag is the flag of `iopath net load` that Bench adds in a
// namespace that drops packets (load.Config.Lossy).
const LossyFlag = "--lossy"

const (
	// The bounds of Options.RTOMax: the kernel's for tcp_rto_max_ms.
	MinRTOMax = time.Second
	MaxRTOMax = 120 * time.Second
	// DefaultRTOMax is the RTOMax net bench --loss uses unless told.
	DefaultRTOMax = time.Second
	// lossyDialBound is what a load child on a lossy network may spend
	// dialling: lossyDialTries of TCP's SYN retransmissions (tens of
	// seconds each at most) for the unluckiest connection.
	lossyDialBound = 3 * time.Minute
)

// rtoMaxSysctl is the per-namespace cap on TCP's retransmission timeout.
const rtoMaxSysctl = "net/ipv4/tcp_rto_max_ms"

// In a lossy namespace a closed socket (the server's, once the client's
// FIN came) retransmits its own FIN up to lossyOrphanRetries times before
// it is dropped, instead of the kernel's 8 (tcp_orphan_retries 0): at 30%
// loss a FIN and its ACK both get through about half the time, so 9 tries
// in a row fail for about 3 connections in 1,000, which are then reset
// by the client's next packet after every byte was echoed (the
// namespace's TCPAbortOnTimeout counts them). 16 tries fail for about 2
// in 100,000.
const (
	orphanRetriesSysctl = "net/ipv4/tcp_orphan_retries"
	lossyOrphanRetries  = 15
)

// benchLoss is Bench with Options.Loss: the matrix once per loss level,
// each in a fresh network namespace with that share of its loopback's
// packets dropped, made before the level's servers start and removed once
// they have stopped, whatever ended them. The levels' points are one
// report, each point tagged with its loss.
func benchLoss(ctx context.Context, o Options) (*netresult.Report, error) {
	if err := netns.Check(); err != nil {
		return nil, err
	}
	// Every level's profiles, before the first level runs.
	if err := o.refuseProfiles(); err != nil {
		return nil, err
	}
	// Namespaces an earlier iopath could not remove (killed outright)
	// would otherwise stay until reboot.
	stale, err := netns.RemoveStale(ctx)
	if err != nil {
		return nil, err
	}
	levels := slices.Clone(o.Loss)
	perLevel := len(o.Modes) * len(o.Conns) * len(o.Sizes) * len(o.Engines) * o.Runs
	var rep *netresult.Report
	for i, loss := range levels {
		r, err := benchLevel(ctx, o, i, loss, perLevel)
		if r != nil {
			for j := range r.Points {
				p := &r.Points[j]
				p.Loss, p.LossSet, p.LossWindowNs = loss, true, int64(o.Recovery)
				p.Summarize()
			}
			if rep == nil {
				rep = r
			} else {
				rep.Points = append(rep.Points, r.Points...)
				for _, s := range r.Skipped {
					if !slices.Contains(rep.Skipped, s) {
						rep.Skipped = append(rep.Skipped, s)
					}
				}
				for _, n := range r.Notes {
					if !slices.Contains(rep.Notes, n) {
						rep.Notes = append(rep.Notes, n)
					}
				}
				for _, e := range r.Config.Engines {
					if !slices.Contains(rep.Config.Engines, e) {
						rep.Config.Engines = append(rep.Config.Engines, e)
					}
				}
			}
			rep.Config.Loss = levels
		}
		if err != nil {
			return rep, err
		}
	}
	rep.Config.RTOMaxMs = o.RTOMax.Milliseconds()
	note := "--loss: each loss level ran in a network namespace of its own (removed after), " +
		"its loopback dropping that share of packets (nftables, dropped on arrival: requests and echoes alike); retrans/1k counts the namespace's TCP retransmissions"
	if o.RTOMax > 0 {
		note += fmt.Sprintf("; TCP's retransmission timeout was capped at %v there (--rto-max; the kernel's default is 120 s)", o.RTOMax)
	}
	if slices.ContainsFunc(levels, func(l float64) bool { return l > 0 }) {
		note += fmt.Sprintf("; where packets were dropped a closed socket retransmitted its FIN up to %d times (tcp_orphan_retries; the kernel's default is 8), so that a connection whose every byte was echoed is not reset at its close", lossyOrphanRetries)
	}
	rep.Notes = append(rep.Notes, note)
	if len(stale) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("removed %d network namespaces left by iopath processes that were killed before they could: %s", len(stale), strings.Join(stale, ", ")))
	}
	return rep, nil
}

// benchLevel runs the matrix at one loss level (the i-th) in its own
// namespace.
func benchLevel(ctx context.Context, o Options, i int, loss float64, perLevel int) (*netresult.Report, error) {
	name := netns.Name(os.Getpid(), i)
	initial := loss
	if o.Recovery > 0 {
		initial = 0 // each run drops packets for its window only
	}
	ns, err := netns.New(ctx, name, initial)
	if err != nil {
		return nil, err
	}
	forget := func() {}
	if o.TrackNS != nil {
		forget = o.TrackNS(name)
	}
	defer func() {
		ns.Close()
		forget()
	}()
	if loss > 0 {
		if err := ns.Sysctl(orphanRetriesSysctl, strconv.Itoa(lossyOrphanRetries)); err != nil {
			return nil, err
		}
	}
	var note string
	if o.RTOMax > 0 {
		err := ns.Sysctl(rtoMaxSysctl, strconv.FormatInt(o.RTOMax.Milliseconds(), 10))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			note = "--rto-max: this kernel has no net.ipv4.tcp_rto_max_ms (it came in Linux 6.15): TCP's retransmission backoff was the kernel's, up to 120 s"
		case err != nil:
			return nil, err
		}
	}
	lo := o
	lo.Loss, lo.RTOMax, lo.Recovery = nil, 0, 0
	lo.ns, lo.level, lo.recovery = ns, loss, o.Recovery
	if o.PerfDir != "" {
		lo.perfTag = lossTag(loss)
	}
	command := o.Command
	lo.Command = func(args ...string) *exec.Cmd {
		cmd := command(args...)
		ns.Command(cmd) // only fails without ip, which netns.Check found
		return cmd
	}
	if progress := o.Progress; progress != nil {
		lo.Progress = func(done, total int, what string) {
			progress(i*perLevel+done, len(o.Loss)*perLevel, fmt.Sprintf("%s, %g%% loss", what, 100*loss))
		}
	}
	r, err := Bench(ctx, lo)
	if r != nil && note != "" {
		r.Notes = append(r.Notes, note)
	}
	return r, err
}
