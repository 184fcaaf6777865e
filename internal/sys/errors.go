package sys

import "errors"

// The two conditions every layer of iopath reports, defined once. They
// live here, in the package at the bottom of the module, because it is the
// one package that every package reporting them already imports (engine,
// batch, features, netio and its servers, fio, gen, bench, advise, the
// root package) and it imports none of ours: a value defined any higher
// (features, engine) could not be wrapped by the packages under internal/
// without an upward import. The public names are aliases of these:
// iopath.ErrNotSupported, features.ErrNotSupported, engine.ErrNotSupported,
// batch.ErrNotSupported, netio.ErrNotSupported, writev.ErrNotSupported and
// filesrv.ErrNotSupported are ErrNotSupported; iopath.ErrNotRegular,
// engine.ErrNotRegular, batch.ErrNotRegular and fio.ErrNotRegular are
// ErrNotRegular. So one errors.Is check holds for an error from any of
// them.
var (
	// ErrNotSupported is wrapped by every error that says a path cannot
	// run in this kernel, process or configuration (io_uring refused, an
	// opcode missing, O_DIRECT refused), with the reason in the text.
	ErrNotSupported = errors.New("not supported")
	// ErrNotRegular is wrapped (inside an *fs.PathError) by every error
	// for a directory, FIFO, socket or device given to something that
	// reads or serves regular files only.
	ErrNotRegular = errors.New("not a regular file")
)
