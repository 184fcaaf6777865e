// Package sys is iopath's only door to golang.org/x/sys/unix.
//
// Every raw system call the project makes goes through here, so that the
// rules of the kernel layer live in one place: EINTR is retried, an errno is
// checked before it is boxed into an error (a zero errno never becomes a
// non-nil error), and file errors come back as *fs.PathError so that
// errors.Is(err, fs.ErrNotExist) works for callers.
//
// The functions are safe for concurrent use; none keeps state beyond the
// cached page size. Linux only.
package sys
