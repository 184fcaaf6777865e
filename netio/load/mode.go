package load

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode kinds.
const (
	PingPong = "pingpong"
	Pipeline = "pipeline"
	Stream   = "stream"
)

// MaxDepth bounds the depth of pipeline:K (each message in flight keeps
// an 8-byte send time per connection).
const MaxDepth = 1024

// Mode is how each connection drives the server.
type Mode struct {
	// Kind is "pingpong", "pipeline" or "stream".
	Kind string
	// Depth is the number of messages in flight per connection: 1 for
	// pingpong, K for pipeline:K, 0 for stream (unbounded).
	Depth int
}

// ParseMode parses "pingpong", "pipeline:K" (1 ≤ K ≤ MaxDepth) or
// "stream".
func ParseMode(s string) (Mode, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	switch kind {
	case PingPong, Stream:
		if hasArg {
			return Mode{}, fmt.Errorf("mode %q: %s takes no depth (pipeline:K does)", s, kind)
		}
		if kind == Stream {
			return Mode{Kind: Stream}, nil
		}
		return Mode{Kind: PingPong, Depth: 1}, nil
	case Pipeline:
		if !hasArg {
			return Mode{}, fmt.Errorf("mode %q: want pipeline:K with K messages in flight, such as pipeline:16", s)
		}
		k, err := strconv.Atoi(arg)
		if err != nil || k < 1 || k > MaxDepth {
			return Mode{}, fmt.Errorf("mode %q: depth %q: want an integer from 1 to %d", s, arg, MaxDepth)
		}
		return Mode{Kind: Pipeline, Depth: k}, nil
	}
	return Mode{}, fmt.Errorf("mode %q: want pingpong, pipeline:K or stream", s)
}

// String is the form ParseMode reads.
func (m Mode) String() string {
	if m.Kind == Pipeline {
		return Pipeline + ":" + strconv.Itoa(m.Depth)
	}
	return m.Kind
}

// check reports whether m is a Mode ParseMode could have returned.
func (m Mode) check() error {
	switch {
	case m.Kind == PingPong && m.Depth == 1,
		m.Kind == Stream && m.Depth == 0,
		m.Kind == Pipeline && m.Depth >= 1 && m.Depth <= MaxDepth:
		return nil
	case m.Kind == "" && m.Depth == 0:
		return fmt.Errorf("mode not set: want pingpong, pipeline:K or stream")
	}
	return fmt.Errorf("mode {Kind: %q, Depth: %d}: want pingpong (depth 1), pipeline:K (1 ≤ K ≤ %d) or stream (depth 0)", m.Kind, m.Depth, MaxDepth)
}
