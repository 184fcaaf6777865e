// Package callback carries a panic in a caller's function, called by the
// library on a goroutine of its own, back to the caller's goroutine.
//
// A panic on a goroutine that nothing recovers ends the process, and a
// deferred recover in the caller of iopath.ReadFiles or Scan cannot catch
// a panic raised on a worker goroutine. So every place that calls a
// caller's function from a worker defers Guard.Catch there: the panic is
// caught, kept (the first one), and the call returns ErrPanicked, which
// stops the workers as any error does. Once every worker has ended, every
// request has been reaped and every descriptor is closed, the entry point
// calls Guard.Raise on the caller's goroutine, which panics again with the
// value fn panicked with.
package callback

import (
	"errors"
	"sync"
)

// ErrPanicked is what a guarded call returns when the function panicked;
// it stops the workers like any error. Callers never see it: Raise panics
// instead.
var ErrPanicked = errors.New("callback panicked")

// Guard holds the first panic of a caller's function. The zero value is
// ready; it is safe for use by several goroutines at once.
type Guard struct {
	mu  sync.Mutex
	set bool
	v   any
}

// Catch recovers a panic in the deferring function, keeps the first, and
// sets *err to ErrPanicked. It must be deferred directly:
//
//	defer g.Catch(&err)
//	return fn(x)
//
// A memory fault turned into a panic (debug.SetPanicOnFault, which the
// mmap paths set to catch a file shrinking under a mapping) is not the
// caller's: it is panicked again, for the mapping's owner to recover.
func (g *Guard) Catch(err *error) {
	r := recover()
	if r == nil {
		return // since Go 1.21 panic(nil) recovers a *runtime.PanicNilError
	}
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		panic(r)
	}
	g.mu.Lock()
	if !g.set {
		g.set, g.v = true, r
	}
	g.mu.Unlock()
	*err = ErrPanicked
}

// Panicked reports whether a panic was caught.
func (g *Guard) Panicked() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.set
}

// Raise panics with the value the function panicked with, if it did. Call
// it (or defer it) on the caller's goroutine once the work has stopped and
// everything is closed.
func (g *Guard) Raise() {
	g.mu.Lock()
	set, v := g.set, g.v
	g.mu.Unlock()
	if set {
		panic(v)
	}
}
