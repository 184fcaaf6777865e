package panics

import (
	"errors"
	"runtime"
	"sync"
	"testing"
)

type boom struct{ n int }

// A panic on a goroutine the caller did not start is caught there, turned
// into ErrPanicked, and raised on the caller's goroutine with its value.
func TestCarrier(t *testing.T) {
	var c Carrier
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			errs[i] = func() (err error) {
				defer c.Catch(&err)
				if i > 0 {
					panic(boom{i})
				}
				return nil
			}()
		})
	}
	wg.Wait()
	if errs[0] != nil || !errors.Is(errs[1], ErrPanicked) || !errors.Is(errs[2], ErrPanicked) {
		t.Fatalf("errors %v: want nil for the worker that did not panic, ErrPanicked for the others", errs)
	}
	if !c.Panicked() {
		t.Fatal("Panicked is false")
	}
	r := func() (r any) {
		defer func() { r = recover() }()
		c.Raise()
		return nil
	}()
	if b, ok := r.(boom); !ok || (b.n != 1 && b.n != 2) {
		t.Fatalf("recovered %v, want one of the workers' values", r)
	}
}

func TestCarrierNoPanic(t *testing.T) {
	var c Carrier
	err := func() (err error) {
		defer c.Catch(&err)
		return errors.New("plain")
	}()
	if err == nil || errors.Is(err, ErrPanicked) || c.Panicked() {
		t.Fatalf("got %v, panicked %v: a plain error must pass through", err, c.Panicked())
	}
	c.Raise() // must not panic
}

// panic(nil) is a panic too (a *runtime.PanicNilError since Go 1.21).
func TestCarrierPanicNil(t *testing.T) {
	var c Carrier
	err := func() (err error) {
		defer c.Catch(&err)
		panic(nil)
	}()
	if !errors.Is(err, ErrPanicked) {
		t.Fatalf("got %v", err)
	}
	r := func() (r any) {
		defer func() { r = recover() }()
		c.Raise()
		return nil
	}()
	if _, ok := r.(*runtime.PanicNilError); !ok {
		t.Fatalf("recovered %T %v", r, r)
	}
}
