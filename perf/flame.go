package perf

import (
	"slices"
	"strings"
)

// Flame is a call tree for a flame graph: the root is every sample, each
// child a function called from its parent, its Value the samples in it
// and below it. A report keeps a pruned copy (Prune) in its JSON, from
// which the HTML page draws its icicle.
type Flame struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind,omitempty"` // FrameKind of the function, a Kind's String
	Value    int64    `json:"value"`
	Children []*Flame `json:"children,omitempty"`
}

// NewFlame is an empty tree to add samples to.
func NewFlame() *Flame { return &Flame{Name: "all"} }

// Add adds every sample of s to f, root first (the leaf is drawn last).
func (f *Flame) Add(s *Samples) {
	kinds := make([]string, len(s.Frames))
	for i, fr := range s.Frames {
		kinds[i] = FrameKind(fr).String()
	}
	for i := range s.List {
		smp := &s.List[i]
		f.Value++
		n := f
		for j := len(smp.Stack) - 1; j >= 0; j-- {
			fr := smp.Stack[j]
			n = n.child(s.Frames[fr].Func, kinds[fr])
			n.Value++
		}
	}
}

func (f *Flame) child(name, kind string) *Flame {
	for _, c := range f.Children {
		if c.Name == name {
			return c
		}
	}
	c := &Flame{Name: name, Kind: kind}
	f.Children = append(f.Children, c)
	return c
}

// Prune returns a copy of f without the calls that hold less than min of
// the root's samples (their time stays in their caller's width), children
// in name order: a tree small enough for a report.
func (f *Flame) Prune(min float64) *Flame {
	limit := min * float64(f.Value)
	var walk func(n *Flame) *Flame
	walk = func(n *Flame) *Flame {
		c := &Flame{Name: n.Name, Kind: n.Kind, Value: n.Value}
		for _, ch := range n.Children {
			if float64(ch.Value) >= limit && ch.Value > 0 {
				c.Children = append(c.Children, walk(ch))
			}
		}
		slices.SortFunc(c.Children, func(a, b *Flame) int { return strings.Compare(a.Name, b.Name) })
		return c
	}
	return walk(f)
}

// Count is the number of nodes in f.
func (f *Flame) Count() int {
	n := 1
	for _, c := range f.Children {
		n += c.Count()
	}
	return n
}

// Merge adds g's samples into f, call by call: the tree of both
// recordings together (of trees already pruned, the calls either kept).
func (f *Flame) Merge(g *Flame) {
	if g == nil {
		return
	}
	f.Value += g.Value
	for _, gc := range g.Children {
		f.child(gc.Name, gc.Kind).Merge(gc)
	}
}
