package perfctl

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestAbort: a command no perf answers ends when Abort is called, well
// before its timeout, and every later one fails at once.
func TestAbort(t *testing.T) {
	dir := t.TempDir()
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, p := range []string{ctl, ack} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Open(ctl + "," + ack)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := c.Disable()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.Abort()
	select {
	case err := <-done:
		if !errors.Is(err, ErrAborted) {
			t.Errorf("aborted Disable: %v", err)
		}
	case <-time.After(ackTimeout - time.Second):
		t.Fatal("Abort did not end the wait for perf's answer")
	}
	if _, err := c.Enable(); !errors.Is(err, ErrAborted) {
		t.Errorf("Enable after Abort: %v", err)
	}
}
