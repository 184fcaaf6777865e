package uring

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

func (r *Ring) register(op uint32, arg unsafe.Pointer, nr uint32) (int, error) {
	r.syscalls++
	return sys.IoUringRegister(r.fd, op, arg, nr)
}

// RegisterFilesSparse registers a table of n empty file slots, to be filled
// with UpdateFiles or by OPENAT into a direct slot. It uses
// IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE (Linux 5.19) and
// falls back to IORING_REGISTER_FILES with -1 entries on older kernels.
func (r *Ring) RegisterFilesSparse(n uint32) error {
	reg := rsrcRegister{Nr: n, Flags: rsrcRegisterSparse}
	_, err := r.register(registerFiles2, unsafe.Pointer(&reg), uint32(unsafe.Sizeof(reg)))
	if err == nil {
		r.files = true
		return nil
	}
	if err != sys.EINVAL {
		return registerError("sparse files", err)
	}
	fds := make([]int32, n)
	for i := range fds {
		fds[i] = -1
	}
	if err := r.RegisterFiles(fds); err != nil {
		return err
	}
	return nil
}

// RegisterFiles registers fds as the fixed file table (-1 for an empty slot).
func (r *Ring) RegisterFiles(fds []int32) error {
	if len(fds) == 0 {
		return fmt.Errorf("io_uring register files: empty table")
	}
	var pin runtime.Pinner
	pin.Pin(&fds[0])
	defer pin.Unpin()
	if _, err := r.register(registerFiles, unsafe.Pointer(&fds[0]), uint32(len(fds))); err != nil {
		return registerError("files", err)
	}
	r.files = true
	return nil
}

// UpdateFiles sets slots off, off+1, ... of the file table to fds (-1
// empties a slot). A slot being emptied stays usable by requests already
// in flight.
func (r *Ring) UpdateFiles(off uint32, fds []int32) error {
	if len(fds) == 0 {
		return nil
	}
	var pin runtime.Pinner
	pin.Pin(&fds[0])
	defer pin.Unpin()
	up := filesUpdate{Offset: off, Fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	n, err := r.register(registerFilesUpdate, unsafe.Pointer(&up), uint32(len(fds)))
	if err != nil {
		return registerError("update files", err)
	}
	if n != len(fds) {
		return fmt.Errorf("io_uring update files: %d of %d slots updated", n, len(fds))
	}
	return nil
}

// UnregisterFiles drops the file table.
func (r *Ring) UnregisterFiles() error {
	r.files = false
	if _, err := r.register(unregisterFiles, nil, 0); err != nil {
		return registerError("unregister files", err)
	}
	return nil
}

// RegisterBuffers registers bufs as fixed buffers 0..len(bufs)-1, for
// READ_FIXED. The memory must stay mapped until UnregisterBuffers or Close;
// use off-heap memory (sys.MmapAnon): the kernel pins its pages and counts
// them against RLIMIT_MEMLOCK for unprivileged users.
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	if len(bufs) == 0 {
		return fmt.Errorf("io_uring register buffers: no buffers")
	}
	iov := make([]sys.Iovec, len(bufs))
	for i, b := range bufs {
		iov[i].Base = unsafe.SliceData(b)
		iov[i].SetLen(len(b))
	}
	var pin runtime.Pinner
	pin.Pin(&iov[0])
	defer pin.Unpin()
	if _, err := r.register(registerBuffers, unsafe.Pointer(&iov[0]), uint32(len(iov))); err != nil {
		return registerError("buffers", err)
	}
	r.buffers = true
	return nil
}

// UnregisterBuffers drops the fixed buffers.
func (r *Ring) UnregisterBuffers() error {
	r.buffers = false
	if _, err := r.register(unregisterBuffers, nil, 0); err != nil {
		return registerError("unregister buffers", err)
	}
	return nil
}

// Probe asks the kernel which opcodes it supports (IORING_REGISTER_PROBE,
// Linux 5.6).
func (r *Ring) Probe() (*OpSet, error) {
	pb := new(probeBuf)
	var pin runtime.Pinner
	pin.Pin(pb)
	defer pin.Unpin()
	if _, err := r.register(registerProbe, unsafe.Pointer(pb), probeOps); err != nil {
		return nil, registerError("probe", err)
	}
	s := &OpSet{LastOp: Op(pb.LastOp)}
	for i := 0; i < int(pb.OpsLen) && i < probeOps; i++ {
		if pb.Ops[i].Flags&opSupported != 0 {
			s.add(Op(pb.Ops[i].Op))
		}
	}
	return s, nil
}
