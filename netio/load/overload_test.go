package load

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/netio"
)

// limitedServer is netio's epoll engine with a limit of max connections:
// it accepts the ones over it and closes them at once.
func limitedServer(t *testing.T, max int) (string, netio.Server) {
	t.Helper()
	s, err := netio.Listen("epoll", netio.Config{MaxConns: max, Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String(), s
}

// Connections over the server's limit are refused: counted as such with
// Refusals, failures without it; the others are served and verified.
func TestRefusals(t *testing.T) {
	checkFds(t)
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			addr, _ := limitedServer(t, 3)
			cfg := Config{Addr: addr, Conns: 8, Size: 64, Mode: mustMode(t, "pingpong"), Client: client,
				Duration: 200 * time.Millisecond, Refusals: true}
			res, err := Run(context.Background(), cfg)
			clean(t, res, err)
			if res.Refused != 5 || res.Carried != 3 {
				t.Errorf("%d refused, %d carried; want 5 and 3", res.Refused, res.Carried)
			}
			cfg.Refusals = false
			res, err = Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.ConnErrors != 5 || res.Refused != 0 || res.Err() == nil {
				t.Errorf("without Refusals: %d failed, %d refused (%v); want 5 failed", res.ConnErrors, res.Refused, res.Err())
			}
		})
	}
}

// A share of connections resets itself mid-request: counted, not failed,
// nothing they were owed counted lost, and the others verified.
func TestResets(t *testing.T) {
	checkFds(t)
	addr := echoServer(t)
	res, err := Run(context.Background(), Config{Addr: addr, Conns: 10, Size: 64, Mode: mustMode(t, "pipeline:4"),
		Duration: 300 * time.Millisecond, ResetShare: 0.3})
	clean(t, res, err)
	if res.Resets != 3 || res.Client != ClientNet {
		t.Errorf("%d resets on the %s client, want 3 on net", res.Resets, res.Client)
	}
	for _, c := range []Config{
		{ResetShare: 1.5, Mode: mustMode(t, "pingpong")},
		{ResetShare: 0.1, Mode: mustMode(t, "stream")},
		{ResetShare: 0.1, Mode: mustMode(t, "pingpong"), Rate: 1000},
		{ResetShare: 0.1, Mode: mustMode(t, "pingpong"), Client: ClientEpoll},
	} {
		c.Addr, c.Conns, c.Size, c.Duration = addr, 1, 64, time.Second
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "reset share") {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
