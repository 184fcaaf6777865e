package sys

import "golang.org/x/sys/unix"

// FstatfsType returns the filesystem type (statfs f_type, a magic
// number) of the open descriptor fd, retrying EINTR. It returns the raw
// errno on failure.
func FstatfsType(fd int) (int64, error) {
	for {
		var st unix.Statfs_t
		err := unix.Fstatfs(fd, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return int64(st.Type), nil
	}
}

// StatfsType is FstatfsType for a path (symlinks followed). Errors are
// *fs.PathError.
func StatfsType(path string) (int64, error) {
	for {
		var st unix.Statfs_t
		err := unix.Statfs(path, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, pathErr("statfs", path, err)
		}
		return int64(st.Type), nil
	}
}

// configfsMagic is CONFIGFS_MAGIC (include/uapi/linux/magic.h), which
// x/sys/unix does not define.
const configfsMagic = 0x62656570

// PseudoFS reports whether typ (from FstatfsType) is a filesystem whose
// files the kernel makes as they are read: procfs, sysfs, debugfs,
// tracefs, configfs, securityfs, cgroup (v1 and v2). Their st_size says
// nothing about their content (0 for /proc, 4096 for a sysfs
// attribute), they cannot be mapped, and a read may end short anywhere:
// they must be read with read(2) to the end.
func PseudoFS(typ int64) bool {
	switch typ {
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.DEBUGFS_MAGIC,
		unix.TRACEFS_MAGIC, configfsMagic, unix.SECURITYFS_MAGIC,
		unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return true
	}
	return false
}

// LocalFS reports whether typ (from FstatfsType) is a filesystem on a
// local disk or in memory whose open and read-only close never wait on a
// network, a daemon or a user: ext2/3/4, XFS, Btrfs, F2FS, tmpfs, and
// overlayfs (a container's root, whose layers are such filesystems).
// FUSE, NFS, CIFS, Ceph and the pseudo-filesystems are not.
func LocalFS(typ int64) bool {
	switch typ {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.F2FS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
		return true
	}
	return false
}
