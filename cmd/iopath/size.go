package main

import (
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
