package gen_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/iopath/iopath/gen"
)

func ExampleFile() {
	dir, _ := os.MkdirTemp("", "gen-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data")
	if err := gen.File(context.Background(), path, 5<<20+3, gen.Options{Seed: 1}); err != nil {
		fmt.Println(err)
		return
	}
	st, _ := os.Stat(path)
	fmt.Println(st.Size())
	// Output: 5242883
}

func ExampleTempFile() {
	path, err := gen.TempFile(context.Background(), "", 1<<20, gen.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(path)
	st, _ := os.Stat(path)
	fmt.Println(st.Size())
	// Output: 1048576
}
