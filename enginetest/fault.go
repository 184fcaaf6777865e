package enginetest

import (
	"context"
	"sync/atomic"

	"github.com/iopath/iopath/engine"
)

// FailAfter wraps e in an engine named name that behaves like e until it
// has delivered n bytes in a run, and then fails that run with err, as an
// engine that breaks mid-run would: some blocks have been delivered, the
// rest never will be. The worker that would deliver the block past n
// fails with err instead, so the engine ends the run as it does when one
// of its workers fails (calling Stop on a sink that is an
// engine.Stopper). Tests register it to check that everything above the
// engines (the runner, the reports, a sink that waits) copes.
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
	st, err := r.Prepared.Run(ctx, &faultySink{Sink: s, after: r.f.after, err: r.f.err})
	if err != nil {
		return st, err
	}
	// Fewer bytes than n in the whole file: fail at the end instead.
	return st, r.f.err
}

// faultySink fails the block that goes past after bytes, and every later
// one. It passes Stop on to a sink that takes it.
type faultySink struct {
	engine.Sink
	after     int64
	err       error
	delivered atomic.Int64
}

func (s *faultySink) Block(w int, off int64, b []byte) error {
	if s.delivered.Add(int64(len(b))) > s.after {
		return s.err
	}
	return s.Sink.Block(w, off, b)
}

func (s *faultySink) Stop(err error) {
	if st, ok := s.Sink.(engine.Stopper); ok {
		st.Stop(err)
	}
}
