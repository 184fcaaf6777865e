package netbench

import (
	"cmp"
	"context"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/netio/writev"
)

// WritevOptions say what Writev runs. The zero value of a field takes the
// default.
type WritevOptions struct {
	Parts  []int // part counts k (default writev.DefaultParts)
	Rounds int   // runs of each (way, k), interleaved (default 3)
}

// DefaultWritevRounds is WritevOptions.Rounds' default.
const DefaultWritevRounds = 3

// Writev runs `iopath net bench --writev`: every way of package writev at
// every part count, Rounds times interleaved, in this process (the
// figures are the sending thread's own). A way that cannot run here
// (io_uring disabled) has its error in its results, and is no failure.
//
// The report holds the medians over the rounds with each round's
// figures (netresult.WritevMedians), the configuration, the machine and
// the start time; the caller sets Command and Machine.IopathVersion.
// Writev's error is a bad option, the failed runs (which the report holds
// too), or ctx's: then the report holds the rounds so far.
func Writev(ctx context.Context, o WritevOptions) (*netresult.WritevReport, error) {
	cfg := writev.Config{Parts: o.Parts, Rounds: cmp.Or(o.Rounds, DefaultWritevRounds)}
	parts := o.Parts
	if len(parts) == 0 {
		parts = writev.DefaultParts
	}
	rep := &netresult.WritevReport{
		SchemaVersion: netresult.WritevSchemaVersion,
		Started:       time.Now().UTC(),
		Machine:       features.DescribeMachine("", ""),
		Config: netresult.WritevConfig{Parts: parts, Ways: writev.Ways(),
			MinPartBytes: writev.DefaultMinPart, MaxPartBytes: writev.DefaultMaxPart,
			Responses: writev.DefaultResponses, Rounds: cfg.Rounds},
	}
	rs, err := writev.Run(ctx, cfg)
	if rs == nil && err != nil && ctx.Err() == nil {
		return nil, err // a bad option
	}
	rep.Results = netresult.WritevMedians(rs)
	return rep, err
}
