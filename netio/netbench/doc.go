// Package netbench runs `iopath net bench`: each server engine in a child
// process of its own, pinned to one core where the machine allows, and the
// verifying load generator (package netio/load) in another, pinned to the
// other cores, over a matrix of connection counts × message sizes × modes,
// with the engines interleaved run by run. Its Report is rendered by
// package report (NetDoc for the text formats, NetHTML, NetJSON).
package netbench
