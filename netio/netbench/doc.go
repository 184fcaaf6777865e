// Package netbench orchestrates the network benchmarks, all three of
// them:
//
//   - Bench runs `iopath net bench`: each server engine in a child process
//     of its own, pinned to one core where the machine allows, and the
//     verifying load generator (package netio/load) in another, pinned to
//     the other cores, over a matrix of connection counts × message sizes
//     × modes, with the engines interleaved run by run.
//   - FileServe runs `--serve-file` (package netio/filesrv): the methods
//     this machine can run, each file server in a pinned child, the client
//     pinned to the other cores, rounds interleaved.
//   - Writev runs `--writev` (package netio/writev): every way at every
//     part count, rounds interleaved.
//
// Each returns a report of package netio/netresult (medians with every
// run's figures), which package report renders; the command only checks
// its flags, draws progress and renders.
package netbench
