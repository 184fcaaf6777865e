package netio

// Hooks into the io_uring engine for its tests in package netio_test
// (uring_test.go), which share the conformance suite's helpers.

// SetUringTestParams makes the io_uring Listens that follow use a
// provided buffer ring of entries buffers of size bytes each, a fixed-file
// table of slots slots (0: the default), and, with noLimit, single RECVs
// as on kernels without the multishot RECV limits. restore puts the
// defaults back.
func SetUringTestParams(entries, size, slots int, noLimit bool) (restore func()) {
	uringTestParams = &uringParams{bufEntries: entries, bufSize: size, fileSlots: slots, noRecvLimit: noLimit}
	return func() { uringTestParams = nil }
}

// UringCounters returns an io_uring server's RECVs ended with ENOBUFS and
// CQEs dropped as stale, over all its loops.
func UringCounters(s Server) (enobufs, stale int64) {
	for _, l := range s.(*uringServer).loops {
		enobufs += l.enobufs.Load()
		stale += l.stale.Load()
	}
	return
}

// UringRingFlags returns the setup flags of each loop's ring.
func UringRingFlags(s Server) []uint32 {
	var f []uint32
	for _, l := range s.(*uringServer).loops {
		f = append(f, l.ringFlags)
	}
	return f
}

// UringRecvLimit reports whether an io_uring server's RECVs are multishot
// with the byte limits (else single RECVs).
func UringRecvLimit(s Server) bool { return s.(*uringServer).loops[0].recvLimit }

// UringTurns returns how many RECVs an io_uring server armed from its
// queue of connections waiting for buffers, and how many of those got
// nothing before running out of buffers.
func UringTurns(s Server) (turns, lost int64) {
	for _, l := range s.(*uringServer).loops {
		turns += l.turns.Load()
		lost += l.lostTurns.Load()
	}
	return
}

// UringStalled returns how many of an io_uring server's connections hold
// a stall buffer (bytes their full socket would not take, copied out of
// the provided buffers).
func UringStalled(s Server) int64 {
	var n int64
	for _, l := range s.(*uringServer).loops {
		n += l.stalled.Load()
	}
	return n
}
