package load_test

import (
	"context"
	"fmt"
	"time"

	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/load"
)

// Ten connections of 64-byte ping-pong against netio's net engine for a
// tenth of a second.
func ExampleRun() {
	srv, err := netio.Listen("net", netio.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	mode, _ := load.ParseMode("pingpong")
	res, err := load.Run(context.Background(), load.Config{
		Addr:     srv.Addr().String(),
		Conns:    10,
		Size:     64,
		Mode:     mode,
		Duration: 100 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// res.QPS, res.LatencyNs.P99, res.ClientCPUPerReqUs... vary by machine.
	fmt.Println("measured:", res.Requests > 0, "faults:", res.Err())
	// Output: measured: true faults: <nil>
}

func ExampleParseMode() {
	for _, s := range []string{"pingpong", "pipeline:16", "stream", "pipeline:0"} {
		m, err := load.ParseMode(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: kind %s, depth %d\n", m, m.Kind, m.Depth)
	}
	// Output:
	// pingpong: kind pingpong, depth 1
	// pipeline:16: kind pipeline, depth 16
	// stream: kind stream, depth 0
	// mode "pipeline:0": depth "0": want an integer from 1 to 1024
}
