//go:build linux

package experiment

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"cachebook/engine/units"
)

const hugePage = 2 << 20

// pageBuffer maps size bytes of anonymous memory aligned to 2 MiB and, if
// huge is set, advises the kernel to back it with transparent huge pages.
// It reports whether the advice was accepted (the kernel may still use 4 KiB
// pages where it has no huge page to give). release unmaps the buffer.
func pageBuffer(size int, huge bool) (buf []byte, advised bool, release func() error, err error) {
	full := size + hugePage
	m, err := unix.Mmap(-1, 0, full, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, false, nil, fmt.Errorf("mmap %s: %w", units.FormatBytes(int64(size)), err)
	}
	off := 0
	if r := uintptr(unsafe.Pointer(&m[0])) % hugePage; r != 0 {
		off = int(hugePage - r)
	}
	buf = m[off : off+size : off+size]
	advice := unix.MADV_NOHUGEPAGE
	if huge {
		advice = unix.MADV_HUGEPAGE
	}
	advised = unix.Madvise(buf, advice) == nil && huge
	return buf, advised, func() error {
		if err := unix.Munmap(m); err != nil {
			return fmt.Errorf("munmap: %w", err)
		}
		return nil
	}, nil
}

// allowedCPUs returns the CPUs this process may run on, in order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// pinThread restricts the calling OS thread to cpu; the goroutine must be
// locked to its thread. The returned function restores the previous set.
func pinThread(cpu int) (restore func(), err error) {
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("pin to CPU %d: %w", cpu, err)
	}
	return func() { _ = unix.SchedSetaffinity(0, &old) }, nil
}

// cpuRelation describes how two CPUs share hardware, from the topology
// Linux publishes in sysfs: "SMT siblings" (one core), "same L3", "same
// package" or "other package". It returns "" where sysfs does not say.
func cpuRelation(a, b int) string {
	read := func(cpu int, name string) string {
		s, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/%s", cpu, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(s))
	}
	pa, pb := read(a, "topology/physical_package_id"), read(b, "topology/physical_package_id")
	ca, cb := read(a, "topology/core_id"), read(b, "topology/core_id")
	switch {
	case pa == "" || pb == "":
		return ""
	case pa != pb:
		return "other package"
	case ca != "" && ca == cb:
		return "SMT siblings"
	}
	for i := range 8 {
		idx := fmt.Sprintf("cache/index%d/", i)
		if read(a, idx+"level") != "3" {
			continue
		}
		if cpus, err := parseCPUList(read(a, idx+"shared_cpu_list")); err == nil && slices.Contains(cpus, b) {
			return "same L3"
		}
	}
	return "same package"
}
