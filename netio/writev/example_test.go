package writev_test

import (
	"context"
	"fmt"

	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/netio/writev"
)

// Every way with 1 to 64 parts, three interleaved rounds, reduced to
// medians: CPU and system calls per response.
func ExampleRun() {
	rs, err := writev.Run(context.Background(), writev.Config{Rounds: 3})
	if err != nil {
		fmt.Println(err)
	}
	for _, r := range netresult.WritevMedians(rs) {
		fmt.Printf("k=%-2d %-11s %5.0f CPU ns, %.2f syscalls per response\n", r.K, r.Way, r.CPUNsPerResp, r.SyscallsPerResp)
	}
}
