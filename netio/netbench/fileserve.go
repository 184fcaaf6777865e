package netbench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/iopath/iopath/netio/filesrv"
)

// FileServerStart returns a filesrv.StartFunc that runs each file server
// in a child process of its own (the `net file-server` command of the
// binary command builds), pinned like the echo servers, so that the
// server's process CPU is its own.
func FileServerStart(command func(args ...string) *exec.Cmd) filesrv.StartFunc {
	srvCPUs, _, _ := Pinning()
	return func(ctx context.Context, sc filesrv.ServerConfig) (string, func() error, error) {
		cmd := command("net", "file-server", "--path", sc.Path, "--method", sc.Method,
			"--chunk", strconv.Itoa(sc.Chunk), "--depth", strconv.Itoa(sc.Depth), "--addr", "127.0.0.1:0")
		// Each connection is served on a locked thread in blocking
		// syscalls; one P is enough.
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return "", nil, err
		}
		s := &server{engine: "file server (" + sc.Method + ")", cmd: cmd, exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
		cmd.Stderr = s.stderr
		if err := startPinned(cmd, srvCPUs); err != nil {
			return "", nil, err
		}
		var waitErr error
		lines := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
					select {
					case lines <- m[1]:
					default:
					}
				}
			}
			waitErr = cmd.Wait()
			close(s.exited)
		}()
		stop := func() error {
			s.stop(ctx)
			if waitErr != nil {
				return fmt.Errorf("%s: %v: %s", s.engine, waitErr, s.stderr.last())
			}
			return nil
		}
		select {
		case addr := <-lines:
			return addr, stop, nil
		case <-s.exited:
			return "", nil, fmt.Errorf("%s exited at start: %s", s.engine, s.stderr.last())
		case <-time.After(10 * time.Second):
			s.stop(ctx)
			return "", nil, fmt.Errorf("%s did not start listening in 10 s: %s", s.engine, s.stderr.last())
		case <-ctx.Done():
			s.stop(ctx)
			return "", nil, ctx.Err()
		}
	}
}
