package experiment

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"cachebook/engine/units"
)

// boolParam parses a true/false parameter, recording an error in p.
func boolParam(p *params, name string) bool {
	s := p.String(name)
	v, err := strconv.ParseBool(s)
	if err != nil {
		p.fail(fmt.Errorf("%s must be true or false, got %q", name, s))
		return false
	}
	return v
}

// viewWords views b as uint32 words (len(b)/4 of them). b must be 4-byte
// aligned, as every mmap'd or heap-allocated buffer of this size is.
func viewWords(b []byte) []uint32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// cost is what the memory experiments report: the workers' thread CPU
// time where the OS has it (so waiting for a core on a busy machine does
// not count as memory latency), else the wall time.
func (s runStats) cost() time.Duration {
	if c := s.CPUTotal(); c > 0 {
		return c
	}
	return s.Wall
}

// parseCPUList parses a Linux CPU list such as "0-3,8,10-11" (the format
// of sysfs shared_cpu_list) into CPU numbers in order. Numbers above 65535
// and ranges that run backwards are errors.
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for f := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > 65535 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 65535 {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Memory estimates of the new experiments, for the per-cell memory cap:
// each reads its parameters with the same getters and bounds as its run.

// mlpMemory is the chased buffer, the permutation built over its lines
// (4 bytes per 64-byte line) and the 2 MiB alignment slack.
func mlpMemory(p *params) int64 {
	size := p.Bytes("size", 1<<20, 1<<30)
	return size + size/16 + 4<<20
}

// strideMemory is the buffer (rounded down to a power of two) and the 2 MiB
// alignment slack.
func strideMemory(p *params) int64 {
	return p.Bytes("size", 1<<20, 1<<30) + 4<<20
}

// assocMemory is the span of the largest count at the largest stride.
func assocMemory(p *params) int64 {
	var maxStride, maxCount int64
	for f := range splitList(p.String("strides")) {
		if n, err := units.ParseBytes(f); err == nil && n <= 1<<20 {
			maxStride = max(maxStride, n)
		}
	}
	for f := range splitList(p.String("counts")) {
		if n, err := strconv.Atoi(f); err == nil && n <= 256 {
			maxCount = max(maxCount, int64(n))
		}
	}
	return maxCount*maxStride + 4<<20
}

// substringMemory is the URL column held in memory: about 128 bytes per
// URL (ClickBench's average URL is well under that) plus its offsets, and
// as much again for the engine's reading of it.
func substringMemory(p *params) int64 {
	return int64(p.Int("limit", 1, 100_000_000)) * 2 * (128 + 4)
}
