// Package panics carries a panic out of a goroutine that runs a caller's
// callback (an engine's worker calling a Sink, a batch reader's pool
// calling fn) to the goroutine that made the call, where the caller can
// recover it.
//
// A panic on a goroutine the caller did not start cannot be recovered by
// the caller: it ends the process. So the goroutine that calls the
// callback defers Catch, which recovers the panic, keeps the first value
// and turns the panic into the error ErrPanicked; the work then stops as
// it does after any other error (the other workers stopped, every request
// in flight reaped, every descriptor closed), and the function that
// started it calls Raise last, on its caller's goroutine, which panics
// again with the kept value. The value is the callback's own (so that
// `if r, ok := recover().(myPanic)` works); its stack is lost, as with
// any re-panic.
//
// A memory fault that debug.SetPanicOnFault turned into a panic (a mapped
// file that shrank) is caught like any other panic: a mapping's owner
// that turns such faults into its own error defers its own recover below
// Catch, closer to the fault.
//
// A Carrier is safe for concurrent use: many workers may Catch into one.
package panics

import (
	"errors"
	"sync"
)

// ErrPanicked is what Catch makes the catching function return, so that
// the work stops as after an error. The caller never sees it: Raise
// panics first.
var ErrPanicked = errors.New("a callback panicked")

// Carrier keeps the first panic caught by Catch until Raise. The zero
// value is ready to use.
type Carrier struct {
	mu  sync.Mutex
	set bool
	v   any
}

// Catch recovers a panic in the function that defers it, keeps its value
// if it is the first, and sets *errp to ErrPanicked. It must be deferred
// directly (defer c.Catch(&err)), as recover requires. Without a panic it
// does nothing.
func (c *Carrier) Catch(errp *error) {
	r := recover()
	if r == nil {
		return // since Go 1.21 panic(nil) recovers a *runtime.PanicNilError
	}
	c.mu.Lock()
	if !c.set {
		c.set, c.v = true, r
	}
	c.mu.Unlock()
	*errp = ErrPanicked
}

// Panicked reports whether Catch has caught a panic.
func (c *Carrier) Panicked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set
}

// Raise panics with the value of the first panic caught, if there was
// one. Call it on the goroutine of the call that started the work, after
// everything the work held is released: deferred first (so that it runs
// last), or just before returning.
func (c *Carrier) Raise() {
	c.mu.Lock()
	set, v := c.set, c.v
	c.mu.Unlock()
	if set {
		panic(v)
	}
}
