package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/units"
)

// sizeValue is a pflag.Value for byte sizes like 4k, 128KiB, 1GiB.
type sizeValue struct{ v *int64 }

func (s sizeValue) String() string {
	if s.v == nil || *s.v == 0 {
		return "0" // pflag shows no default for "0"
	}
	return units.FormatSize(*s.v)
}
func (s sizeValue) Set(str string) error {
	n, err := units.ParseSize(str)
	if err != nil {
		return err
	}
	*s.v = n
	return nil
}
func (s sizeValue) Type() string { return "size" }

// sizeListValue is a pflag.Value for comma-separated sizes: 4k,128k,1m.
type sizeListValue struct{ v *[]int64 }

func (s sizeListValue) String() string {
	var parts []string
	for _, n := range *s.v {
		parts = append(parts, units.FormatSize(n))
	}
	return strings.Join(parts, ",")
}
func (s sizeListValue) Set(str string) error {
	items, err := units.ParseList(str)
	if err != nil {
		return err
	}
	var out []int64
	for _, p := range items {
		n, err := units.ParseSize(p)
		if err != nil {
			return err
		}
		out = append(out, n)
	}
	*s.v = out
	return nil
}
func (s sizeListValue) Type() string { return "sizes" }

// intListValue is a pflag.Value for comma-separated integers: 1,8,32.
type intListValue struct{ v *[]int }

func (s intListValue) String() string {
	var parts []string
	for _, n := range *s.v {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ",")
}
func (s intListValue) Set(str string) error {
	items, err := units.ParseList(str)
	if err != nil {
		return err
	}
	var out []int
	for _, p := range items {
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", p)
		}
		out = append(out, n)
	}
	*s.v = out
	return nil
}
func (s intListValue) Type() string { return "ints" }

// stringListValue is a pflag.Value for comma-separated names: pread,mmap.
type stringListValue struct{ v *[]string }

func (s stringListValue) String() string { return strings.Join(*s.v, ",") }
func (s stringListValue) Set(str string) error {
	items, err := units.ParseList(str)
	if err != nil {
		return err
	}
	*s.v = items
	return nil
}
func (s stringListValue) Type() string { return "list" }
