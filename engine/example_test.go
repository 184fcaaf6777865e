package engine_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/iopath/iopath/engine"
)

// Read a file through one engine and checksum it. Blocks may arrive out of
// order and from several goroutines, so the sink keeps per-worker state and
// combines it at the end.
func Example() {
	path := filepath.Join(os.TempDir(), "iopath-example.txt")
	if err := os.WriteFile(path, []byte("hello, engines\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	defer os.Remove(path)

	e, err := engine.Lookup("pread") // or "io_uring", "mmap", ...
	if err != nil {
		log.Fatal(err)
	}
	p, err := e.Prepare(engine.Job{Path: path, BlockSize: 4096, Workers: 2})
	if err != nil {
		log.Fatal(err) // errors.Is(err, engine.ErrNotSupported) says why an engine cannot run here
	}
	defer p.Close()

	var mu sync.Mutex
	var bytes int
	var sum uint32
	st, err := p.Run(context.Background(), engine.SinkFunc(func(w int, off int64, b []byte) error {
		mu.Lock() // b is valid only during this call: use it or copy it now
		bytes += len(b)
		sum = crc32.Update(sum, crc32.IEEETable, b)
		mu.Unlock()
		return nil
	}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes in %d block, crc %08x\n", bytes, st.Total().Blocks, sum)
	// Output: 15 bytes in 1 block, crc 4cc4d381
}
