package enginetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/engine"
)

func TestFailAfter(t *testing.T) {
	pread, err := engine.Lookup("pread")
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	e := FailAfter(pread, "faulty-pread", 64<<10, boom)
	if e.Name() != "faulty-pread" {
		t.Errorf("name %q", e.Name())
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := e.Prepare(engine.Job{Path: path, BlockSize: 16 << 10}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var got int64
	_, err = p.Run(context.Background(), engine.SinkFunc(func(w int, off int64, b []byte) error {
		got += int64(len(b))
		return nil
	}))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the injected error", err)
	}
	if got != 64<<10 {
		t.Errorf("delivered %d bytes before failing, want %d", got, 64<<10)
	}
}
