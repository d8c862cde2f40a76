package latency

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// sysctlCacheNames are the macOS sysctl values SysctlCaches reads. On Apple
// Silicon the plain hw.* sizes are the efficiency cores' (an M1 says a
// 4 MiB L2 there, its performance cluster has 12 MiB), so the performance
// cores' hw.perflevel0.* come first; Intel Macs have only the plain ones.
var sysctlCacheNames = []string{
	"hw.perflevel0.l1icachesize", "hw.perflevel0.l1dcachesize",
	"hw.perflevel0.l2cachesize", "hw.perflevel0.l3cachesize",
	"hw.perflevel0.cpusperl2", "hw.perflevel0.cpusperl3",
	"hw.l1icachesize", "hw.l1dcachesize", "hw.l2cachesize", "hw.l3cachesize",
	"hw.cachelinesize", "hw.nperflevels",
}

// sysctlInt decodes a raw sysctl integer: 4 bytes (CTLTYPE_INT, as the
// hw.perflevel0 values are) or 8 (CTLTYPE_QUAD, as hw.l1dcachesize is), in
// the byte order of every Mac, little-endian.
func sysctlInt(b []byte) (int64, error) {
	switch len(b) {
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b))), nil
	case 8:
		return int64(binary.LittleEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("sysctl integer of %d bytes", len(b))
}

// SysctlCaches turns macOS sysctl values (name to value; a name that is
// missing was not reported) into caches: for each level the performance
// cores' hw.perflevel0 size where there is one, else the plain hw size.
// Sizes of zero or less are left out.
func SysctlCaches(v map[string]int64) []Cache {
	var out []Cache
	perf := v["hw.nperflevels"] > 1
	line := v["hw.cachelinesize"]
	add := func(level int, typ, name, sharedBy string) {
		size, perfLevel := v["hw.perflevel0."+name], true
		if size <= 0 {
			size, perfLevel = v["hw."+name], false
		}
		if size <= 0 {
			return
		}
		var notes []string
		if perfLevel && perf {
			notes = append(notes, "the performance cores' (hw.perflevel0)")
		}
		if n := v[sharedBy]; perfLevel && sharedBy != "" && n > 0 {
			notes = append(notes, fmt.Sprintf("shared by %d CPUs", n))
		}
		if typ == "Data" && line > 0 {
			notes = append(notes, fmt.Sprintf("%d-byte lines", line))
		}
		out = append(out, Cache{Level: level, Type: typ, SizeBytes: size, Note: strings.Join(notes, "; ")})
	}
	add(1, "Data", "l1dcachesize", "")
	add(1, "Instruction", "l1icachesize", "")
	add(2, "Unified", "l2cachesize", "hw.perflevel0.cpusperl2")
	add(3, "Unified", "l3cachesize", "hw.perflevel0.cpusperl3")
	sortCaches(out)
	return out
}
