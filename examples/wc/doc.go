// Command wc prints newline, word, character and byte counts, and the
// longest line's display width, for files and directory trees, with the
// same options and output as GNU coreutils wc. It is an example program
// built on iopath's public API: one large file is read with iopath.Scan,
// in blocks counted on several cores at once and out of order; many files
// and directory trees with iopath.ReadFiles.
//
// Unlike GNU wc, which says "Is a directory" for a directory operand and
// counts it as 0, this wc walks it and prints a line for each file in it,
// in lexical order (as if they had been given on the command line).
//
// See README.md for what matches GNU wc and what does not.
package main
