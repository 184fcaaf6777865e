package enginetest

import (
	"context"
	"sync/atomic"

	"github.com/iopath/iopath/engine"
)

// FailAfter wraps e in an engine named name that behaves like e until it
// has delivered n bytes in a run, and then fails that run with err, as an
// engine that breaks mid-run would: some blocks have been delivered, the
// rest never will be. Tests register it to check that everything above the
// engines (the runner, the reports) copes.
func FailAfter(e engine.Engine, name string, n int64, err error) engine.Engine {
	return &faulty{Engine: e, name: name, after: n, err: err}
}

type faulty struct {
	engine.Engine
	name  string
	after int64
	err   error
}

func (f *faulty) Name() string { return f.name }

func (f *faulty) Prepare(j engine.Job) (engine.Prepared, error) {
	p, err := f.Engine.Prepare(j)
	if err != nil {
		return nil, err
	}
	return &faultyRun{Prepared: p, f: f}, nil
}

type faultyRun struct {
	engine.Prepared
	f *faulty
}

func (r *faultyRun) Run(ctx context.Context, s engine.Sink) (*engine.Stats, error) {
	var delivered atomic.Int64
	st, err := r.Prepared.Run(ctx, engine.SinkFunc(func(w int, off int64, b []byte) error {
		if delivered.Add(int64(len(b))) > r.f.after {
			return r.f.err
		}
		return s.Block(w, off, b)
	}))
	if err != nil {
		return st, err
	}
	// Fewer bytes than n in the whole file: fail at the end instead.
	return st, r.f.err
}
