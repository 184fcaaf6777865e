package netio

// takeBuffers takes the buffers of a RECV's CQE: the first is bid, and a
// bundle of res bytes runs on through the buffers after it in the ring.
// Their bytes are counted and queued to send, or counted and dropped
// after our FIN or while closing. A stale CQE's buffers (c nil) are
// dropped uncounted.
func (l *uloop) takeBuffers(c *uconn, bid uint16, res int32) {
	keep := false
	if c != nil && res > 0 {
		l.passIn += int64(res)
		keep = c.state == ucOpen || c.state == ucDrain
	}
	size := int32(l.p.bufSize)
	p := l.ringPos[bid]
	// A CQE with a buffer and no data cannot happen; its buffer goes back.
	for rest := max(res, 1); rest > 0; rest -= size {
		id := l.ringBid[p]
		p++
		l.inRing--
		l.outstanding++
		if keep {
			l.enqueue(c, id, uint32(min(rest, size)))
		} else {
			l.recycle(id)
		}
	}
}

// enqueue queues n bytes received into buffer bid for sending.
func (l *uloop) enqueue(c *uconn, bid uint16, n uint32) {
	b := int32(bid)
	l.segOff[b], l.segEnd[b], l.segNext[b] = 0, n, -1
	if c.tail >= 0 {
		l.segNext[c.tail] = b
	} else {
		c.head = b
	}
	c.tail = b
	c.held += int32(n)
	c.bufs++
}

// consume drops n sent bytes from the head of the queue, giving fully
// sent buffers back.
func (l *uloop) consume(c *uconn, n uint32) {
	for n > 0 && c.head >= 0 {
		b := c.head
		rest := l.segEnd[b] - l.segOff[b]
		if n < rest {
			l.segOff[b] += n
			c.held -= int32(n)
			return
		}
		n -= rest
		c.held -= int32(rest)
		c.bufs--
		c.head = l.segNext[b]
		if c.head < 0 {
			c.tail = -1
		}
		l.recycle(uint16(b))
	}
}

// recycle takes a buffer back from a connection; endPass gives it to the
// kernel.
func (l *uloop) recycle(bid uint16) {
	l.freeBufs = append(l.freeBufs, bid)
	l.outstanding--
}

// refill tops the ring up to its depth from freeBufs, the buffers given
// back last first, and adapts the depth.
func (l *uloop) refill() {
	switch {
	case l.sawNoBufs:
		l.depth = min(l.p.bufEntries, 2*l.depth)
		l.sawNoBufs, l.quiet = false, 0
	case l.depth > l.minDepth:
		if l.quiet++; l.quiet >= 64 {
			l.depth = max(l.minDepth, l.depth-l.depth/8)
			l.quiet = 0
		}
	}
	if l.inRing >= l.depth || len(l.freeBufs) == 0 {
		return
	}
	for l.inRing < l.depth && len(l.freeBufs) > 0 {
		bid := l.freeBufs[len(l.freeBufs)-1]
		l.freeBufs = l.freeBufs[:len(l.freeBufs)-1]
		p := l.br.Position()
		l.ringBid[p], l.ringPos[bid] = bid, p
		l.br.Recycle(bid)
		l.inRing++
	}
	l.br.Publish()
}
