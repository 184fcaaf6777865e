//go:build !invariants

package bufpool

// invariants reports whether the package was built with -tags invariants.
const invariants = false

// Without the invariants tag the checks are empty and inline away.

type bufDebug struct{}

type poolDebug struct{}

func (b *Buf) checkLive(op string) {}

func (p *Pool) onGet(b *Buf, fresh bool) {}

func (p *Pool) onRelease(b *Buf) *Buf { return b }

// outstanding is the number of Bufs handed out and not released, or -1 when
// it is not counted (without the invariants tag).
func (p *Pool) outstanding() int64 { return -1 }
