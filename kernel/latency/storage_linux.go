package latency

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

const storageSupported = true

// openUncached opens name for reading with O_DIRECT, so reads go to the
// device. A file system without direct I/O (tmpfs, some overlays) gets a
// plain open with the page cache dropped before each pass instead.
func openUncached(name string) (*os.File, bool, string, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err == nil {
		probe := alignedBuffer(storageBlock)
		if _, rerr := f.ReadAt(probe, 0); rerr == nil {
			return f, true, "O_DIRECT: reads bypass the page cache", nil
		} else if !errors.Is(rerr, syscall.EINVAL) {
			f.Close()
			return nil, false, "", rerr
		}
		f.Close()
	} else if !errors.Is(err, syscall.EINVAL) {
		return nil, false, "", err
	}
	f, err = os.Open(name)
	if err != nil {
		return nil, false, "", err
	}
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
	return f, false, "this file system has no O_DIRECT: the page cache was dropped (posix_fadvise) before each pass, not bypassed, so a block read twice comes from memory", nil
}

// dropCache asks the kernel to drop f's clean pages from the page cache.
func dropCache(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// freeBytes is the space an unprivileged user may still write in dir.
func freeBytes(dir string) (int64, bool) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return 0, false
	}
	return int64(s.Bavail) * int64(s.Bsize), true
}
