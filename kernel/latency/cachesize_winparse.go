package latency

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The layout of what Windows' GetLogicalProcessorInformationEx writes: a
// run of SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX records, each
//
//	DWORD Relationship; DWORD Size;  // Size: the whole record's bytes
//	CACHE_RELATIONSHIP Cache;        // where Relationship is RelationCache
//
// and CACHE_RELATIONSHIP is
//
//	BYTE Level; BYTE Associativity; WORD LineSize; DWORD CacheSize;
//	DWORD Type;        // PROCESSOR_CACHE_TYPE
//	BYTE Reserved[18];
//	WORD GroupCount;   // 0 before Windows 11 / Server 2022: one mask
//	GROUP_AFFINITY GroupMasks[max(GroupCount, 1)];
//
// with GROUP_AFFINITY { KAFFINITY Mask; WORD Group; WORD Reserved[3]; },
// Mask being pointer-sized. All of it little-endian.
const (
	relationCache   = 2  // LOGICAL_PROCESSOR_RELATIONSHIP RelationCache
	slpiHeaderBytes = 8  // Relationship, Size
	cacheRelBytes   = 32 // CACHE_RELATIONSHIP up to GroupMasks
)

// processorCacheTypes are PROCESSOR_CACHE_TYPE's values, named as sysfs
// names them.
var processorCacheTypes = []string{"Unified", "Instruction", "Data", "Trace"}

// ParseProcessorCaches parses the buffer GetLogicalProcessorInformationEx
// fills for RelationCache into the caches of logical processor 0 of
// processor group 0, as ReadSysfsCaches reads cpu0's. ptrSize is the
// writer's pointer size (8 on 64-bit Windows, 4 on 32-bit), which sizes
// each affinity mask. Records of other relationships are skipped; a record
// that runs past the buffer or is too short for its cache is an error.
func ParseProcessorCaches(buf []byte, ptrSize int) ([]Cache, error) {
	if ptrSize != 4 && ptrSize != 8 {
		return nil, fmt.Errorf("pointer size %d: want 4 or 8", ptrSize)
	}
	le := binary.LittleEndian
	affinityBytes := ptrSize + 8 // Mask, Group, Reserved[3]
	var out []Cache
	for off := 0; off < len(buf); {
		if len(buf)-off < slpiHeaderBytes {
			return nil, fmt.Errorf("record at byte %d: %d bytes left, a header needs %d", off, len(buf)-off, slpiHeaderBytes)
		}
		rel := le.Uint32(buf[off:])
		size := int64(le.Uint32(buf[off+4:]))
		if size < slpiHeaderBytes || size > int64(len(buf)-off) {
			return nil, fmt.Errorf("record at byte %d: size %d outside [%d, %d]", off, size, slpiHeaderBytes, len(buf)-off)
		}
		rec := buf[off+slpiHeaderBytes : off+int(size)]
		at := off
		off += int(size)
		if rel != relationCache {
			continue
		}
		if len(rec) < cacheRelBytes {
			return nil, fmt.Errorf("cache record at byte %d: %d bytes, want at least %d", at, len(rec), cacheRelBytes)
		}
		groups := int(le.Uint16(rec[30:]))
		if groups == 0 {
			groups = 1
		}
		if need := cacheRelBytes + groups*affinityBytes; len(rec) < need {
			return nil, fmt.Errorf("cache record at byte %d: %d bytes, %d group masks need %d", at, len(rec), groups, need)
		}
		var cpus []int // of group 0
		others := false
		for g := range groups {
			a := rec[cacheRelBytes+g*affinityBytes:]
			mask := uint64(le.Uint32(a))
			if ptrSize == 8 {
				mask = le.Uint64(a)
			}
			if le.Uint16(a[ptrSize:]) != 0 {
				others = true
				continue
			}
			for i := range 64 {
				if mask&(1<<i) != 0 {
					cpus = append(cpus, i)
				}
			}
		}
		if len(cpus) == 0 || cpus[0] != 0 {
			continue // not a cache of processor 0
		}
		typ := "Unknown"
		if t := le.Uint32(rec[8:]); t < uint32(len(processorCacheTypes)) {
			typ = processorCacheTypes[t]
		}
		c := Cache{Level: int(rec[0]), Type: typ, SizeBytes: int64(le.Uint32(rec[4:]))}
		if !others {
			c.SharedCPUs = cpuList(cpus)
		}
		if line := le.Uint16(rec[2:]); typ == "Data" && line > 0 {
			c.Note = fmt.Sprintf("%d-byte lines", line)
		}
		if c.SizeBytes > 0 {
			out = append(out, c)
		}
	}
	sortCaches(out)
	return out, nil
}

// cpuList writes ascending CPU numbers as sysfs does: "0-3,8,10-11".
func cpuList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
