package iopath

import (
	"errors"
	"fmt"
	"sync"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/fileio"
)

// testHookNewRing, if set, can make newRing fail as a refused ring does.
var testHookNewRing func() error

// newRing makes an io_uring ring for reads into caller memory (see
// fileio.Ring) with up to depth reads in flight (0: the engines'
// default), after the probe (IOPATH_DISABLE_IO_URING included, as the
// engines honour it). A refusal (seccomp, the sysctl set since the
// probe) wraps ErrNotSupported, and Auto falls back; running out of
// descriptors or memory is reported as itself (EMFILE, ENOMEM).
func newRing(depth int) (*fileio.Ring, error) {
	if err := uringUsable(callOpen); err != nil {
		return nil, err
	}
	if testHookNewRing != nil {
		if err := testHookNewRing(); err != nil {
			return nil, &engine.NotSupportedError{What: "io_uring", Reason: err.Error()}
		}
	}
	if depth <= 0 {
		depth = engine.DefaultQueueDepth
	}
	g, err := fileio.NewRing(depth, uringErr)
	if err != nil {
		return nil, uringErr(err)
	}
	return g, nil
}

// uringErr puts an error of an io_uring system call into this package's
// vocabulary (engine.UringError): a refusal wraps ErrNotSupported with
// the probe's reason; anything else says io_uring and stays itself.
func uringErr(err error) error {
	if err := engine.UringError(err); errors.Is(err, ErrNotSupported) {
		return err
	}
	return fmt.Errorf("io_uring: %w", err)
}

// ringFailed reports whether err says a ring failed with reads in flight,
// whose buffers the kernel may still write.
func ringFailed(err error) bool { return fileio.Failed(err) }

// leakedBufs keeps the pooled buffers a failed ring was reading into
// (ReadFileBuf) for as long as the process lives: the ring may still
// write them, so they never go back to the pool (fileio keeps the ring
// and its pins).
var (
	leakedMu   sync.Mutex
	leakedBufs []*bufpool.Buf
)

// keepForever keeps b out of the pool for good: a failed ring may still
// write it.
func keepForever(b *bufpool.Buf) {
	leakedMu.Lock()
	leakedBufs = append(leakedBufs, b)
	leakedMu.Unlock()
}
