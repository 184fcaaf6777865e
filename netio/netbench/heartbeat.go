package netbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/netio/netresult"
)

// Heartbeats (Options.Heartbeat): every connection sends one small
// message every Heartbeat, open loop, and the run measures what the
// connections cost the server while they are held: its resident memory
// and the kernel's TCP memory beyond what they were before the
// connections were dialled, and its CPU per second.
const (
	MinHeartbeat = 100 * time.Millisecond
	MaxHeartbeat = time.Minute
)

// sockstat is the TCP line of a network namespace's /proc/net/sockstat:
// sockets in use, and the pages the kernel has allocated to TCP socket
// buffers (mem).
type sockstat struct {
	inuse, memPages int64
}

// readSockstat reads the TCP line of the network namespace pid is in.
func readSockstat(pid int) (sockstat, error) {
	path := fmt.Sprintf("/proc/%d/net/sockstat", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return sockstat{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 || string(f[0]) != "TCP:" {
			continue
		}
		var s sockstat
		found := 0
		for i := 1; i+1 < len(f); i += 2 {
			v, err := strconv.ParseInt(string(f[i+1]), 10, 64)
			if err != nil {
				return sockstat{}, fmt.Errorf("%s: %q", path, sc.Text())
			}
			switch string(f[i]) {
			case "inuse":
				s.inuse, found = v, found+1
			case "mem":
				s.memPages, found = v, found+1
			}
		}
		if found == 2 {
			return s, nil
		}
		return sockstat{}, fmt.Errorf("%s: no inuse and mem in %q", path, sc.Text())
	}
	return sockstat{}, fmt.Errorf("%s: no TCP line", path)
}

// heldUse reads what a server holds before a run's connections are
// dialled, and at the start and the end of the window (through the
// window handshake: on and off).
type heldUse struct {
	pid        int
	before     serverUse
	sockBefore sockstat
	start, end serverUse
	sockStart  sockstat
	sockEnd    sockstat
	n          int // readings of the window taken: 0, 1 or 2
}

func newHeldUse(pid int) (*heldUse, error) {
	h := &heldUse{pid: pid}
	var err error
	if h.before, err = readUse(pid); err != nil {
		return nil, err
	}
	if h.sockBefore, err = readSockstat(pid); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *heldUse) on() (int64, error) {
	return h.read(&h.start, &h.sockStart)
}

func (h *heldUse) off() (int64, error) {
	return h.read(&h.end, &h.sockEnd)
}

func (h *heldUse) read(u *serverUse, s *sockstat) (int64, error) {
	var err error
	if *u, err = readUse(h.pid); err != nil {
		return 0, err
	}
	if *s, err = readSockstat(h.pid); err != nil {
		return 0, err
	}
	h.n++
	return metrics.Nanotime(), nil
}

// fill sets r's held figures: the window's readings averaged.
func (h *heldUse) fill(r *netresult.Run) error {
	if h.n != 2 {
		return errors.New("--heartbeat: the load generator did not say where its window started and ended")
	}
	page := int64(os.Getpagesize())
	r.ServerRSSIdle = h.before.rss
	r.ServerRSSHeld = (h.start.rss + h.end.rss) / 2
	r.TCPMemIdle = h.sockBefore.memPages * page
	r.TCPMemHeld = (h.sockStart.memPages + h.sockEnd.memPages) / 2 * page
	r.TCPSocketsHeld = (h.sockStart.inuse + h.sockEnd.inuse) / 2
	return nil
}
