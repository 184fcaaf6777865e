package netbench

import (
	"bytes"
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio/load"
)

// TestCReference builds the C echo servers that scripts/net-cref.sh
// measures iopath's engines against (testdata/cref) and checks that they
// echo every byte, in ping-pong, pipeline and stream and after the peer's
// FIN, so that the yardstick itself is known to be sound. CI installs the
// C compiler and liburing.
func TestCReference(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc): the C yardsticks of scripts/net-cref.sh cannot be built")
	}
	dir := t.TempDir()
	for _, s := range []struct {
		name string
		libs []string
	}{
		{"epoll_echo", nil},
		{"uring_echo", []string{"-luring"}},
	} {
		t.Run(s.name, func(t *testing.T) {
			if s.name == "uring_echo" {
				if err := features.HaveOps("ACCEPT", "RECV", "SENDMSG"); err != nil {
					t.Skipf("io_uring: %v", err)
				}
			}
			bin := filepath.Join(dir, s.name)
			args := append([]string{"-O2", "-Wall", "-o", bin, filepath.Join("testdata", "cref", s.name+".c")}, s.libs...)
			out, err := exec.Command(cc, args...).CombinedOutput()
			if err != nil {
				if strings.Contains(string(out), "liburing.h") {
					t.Skipf("liburing's header is not installed (Debian: liburing-dev): %s", firstLine(string(out)))
				}
				t.Fatalf("cc %s: %v\n%s", s.name, err, out)
			}
			if len(out) > 0 {
				t.Logf("cc %s:\n%s", s.name, out)
			}
			ctx := context.Background()
			srv, err := launch(ctx, exec.Command(bin, "0"), s.name, s.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.stop(ctx)
			addr := srv.addr
			halfClose(t, addr)
			for _, m := range []struct {
				mode  string
				conns int
				size  int
			}{
				{"pingpong", 50, 64},
				{"pipeline:4", 10, 1024},
				{"stream", 20, 16 << 10},
			} {
				mode, err := load.ParseMode(m.mode)
				if err != nil {
					t.Fatal(err)
				}
				res, err := load.Run(ctx, load.Config{Addr: addr, Conns: m.conns, Size: m.size, Mode: mode, Duration: 300 * time.Millisecond})
				if err != nil {
					t.Fatalf("%s: %v", m.mode, err)
				}
				if res.Requests == 0 || res.Corrupted != 0 || res.Lost != 0 || res.ConnErrors != 0 {
					t.Errorf("%s, %d × %d B: %d requests, %d corrupted, %d lost bytes, %d failed connections",
						m.mode, m.conns, m.size, res.Requests, res.Corrupted, res.Lost, res.ConnErrors)
				}
			}
		})
	}
}

// halfClose sends a message and its FIN at once, and checks that the
// server echoes all of it before closing.
func halfClose(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 200<<10)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		done <- err
	}()
	got, err := io.ReadAll(c)
	if werr := <-done; werr != nil {
		t.Fatalf("half-close: write: %v", werr)
	}
	if err != nil || !bytes.Equal(got, msg) {
		t.Errorf("half-close: %d of %d bytes echoed (%v)", len(got), len(msg), err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
