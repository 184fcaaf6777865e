package callback

import (
	"errors"
	"sync"
	"testing"
)

func TestGuard(t *testing.T) {
	var g Guard
	call := func(v any) (err error) {
		defer g.Catch(&err)
		if v != nil {
			panic(v)
		}
		return nil
	}
	if err := call(nil); err != nil || g.Panicked() {
		t.Fatalf("no panic: err %v, Panicked %v", err, g.Panicked())
	}
	g.Raise() // nothing to raise

	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = call("first") })
	wg.Wait()
	wg.Go(func() { errs[1] = call("second") })
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, ErrPanicked) {
			t.Errorf("got %v, want ErrPanicked", err)
		}
	}
	defer func() {
		if r := recover(); r != "first" {
			t.Errorf("Raise panicked with %v, want the first value", r)
		}
	}()
	g.Raise()
	t.Fatal("Raise did not panic")
}

// A memory fault is left to whoever set SetPanicOnFault.
func TestGuardFault(t *testing.T) {
	var g Guard
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("the fault was swallowed")
		}
		if g.Panicked() {
			t.Error("the fault was kept as the function's panic")
		}
	}()
	func() (err error) {
		defer g.Catch(&err)
		panic(fault{})
	}()
}

type fault struct{}

func (fault) Addr() uintptr { return 0 }
