package storage

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"
)

// A SNAPPY block is a uvarint of its decompressed length followed by
// tags: a literal (tag&3 == 0) copies the bytes that follow it, a copy
// (1, 2 or 3) repeats bytes already written, from 1 to 2^32-1 bytes back.
// On the pages of strings and integers a Parquet writer makes, the tags
// are short, a few input bytes each, and their kinds come in no order a
// branch predictor can learn, so a decoder that branches on the kind,
// s2.Decode among them, spends much of its time refilling the pipeline.
//
// decodeSnappy does not branch on the kind where it can help it: each tag
// writes 16 bytes, taken from the literal or from the copy's source,
// whichever the tag asks for, chosen by a mask; the length the tag gives
// then says how many of those bytes count (a copy of up to 64 bytes goes
// on, 16 or 8 bytes at a time). A table indexed by the tag byte gives the
// length, the tag's size and how its offset is read. The tags that this
// cannot serve (a literal of more than 16 bytes, a copy from fewer than 8
// bytes back, the last bytes of the block) take a careful, branching
// step.

// snappyEntry describes the tags with one tag byte. A copy's offset is the
// 64-bit word after the tag byte masked with mask, plus add; a literal has
// mask 0 and add 8, an offset that passes the fast loop's check; a tag the
// fast loop cannot serve has an add no block's output reaches.
type snappyEntry struct {
	add    uint64
	mask   uint32
	length uint8 // bytes the tag writes
	size   uint8 // bytes of the tag, a literal's bytes included
}

// snappyWords says that this CPU loads and stores 64-bit words little-endian
// at any address, which the fast loop needs; elsewhere every tag takes the
// careful step.
const snappyWords = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" || runtime.GOARCH == "wasm"

// snappySlow is the add of a tag the fast loop leaves to the careful step.
const snappySlow = 1 << 40

// snappyTable is the snappyEntry of each tag byte.
var snappyTable = func() (t [256]snappyEntry) {
	for i := range t {
		tag := uint8(i)
		n := int(tag>>2) + 1
		e := &t[i]
		e.add = snappySlow
		switch tag & 3 {
		case 0:
			if n <= 16 {
				*e = snappyEntry{add: 8, length: uint8(n), size: uint8(1 + n)}
			}
		case 1:
			*e = snappyEntry{add: uint64(tag&0xe0) << 3, mask: 0xff, length: 4 + tag>>2&7, size: 2}
		case 2:
			*e = snappyEntry{mask: 0xffff, length: uint8(n), size: 3}
		case 3:
			*e = snappyEntry{mask: 0xffffffff, length: uint8(n), size: 5}
		}
	}
	return t
}()

// decodeSnappy decompresses the SNAPPY block src into dst, whose length
// must be the length the block's header gives. A corrupt block is an
// error, never a read or write outside src and dst.
func decodeSnappy(dst, src []byte) error {
	s := len(src) - len(skipUvarint(src))
	if s == len(src) && len(dst) > 0 {
		return fmt.Errorf("%w: SNAPPY block has no tags", errCorrupt)
	}
	d := 0
	for {
		s, d = decodeSnappyFast(dst, src, s, d)
		if s >= len(src) {
			break
		}
		n, offset, next, ok := snappyTag(src, s)
		if !ok {
			return fmt.Errorf("%w: SNAPPY block corrupt at byte %d", errCorrupt, s)
		}
		if n > len(dst)-d {
			return fmt.Errorf("%w: SNAPPY block writes past its %d bytes at byte %d", errCorrupt, len(dst), s)
		}
		if offset == 0 {
			if n > len(src)-next {
				return fmt.Errorf("%w: SNAPPY literal runs past the block at byte %d", errCorrupt, s)
			}
			copy(dst[d:d+n], src[next:])
			s, d = next+n, d+n
			continue
		}
		if offset > d {
			return fmt.Errorf("%w: SNAPPY copy from before the block's start at byte %d", errCorrupt, s)
		}
		// A copy from fewer bytes back than its length repeats a pattern:
		// each step copies all that is already there, doubling it.
		for i := 0; i < n; {
			i += copy(dst[d+i:d+n], dst[d-offset:d+i])
		}
		s, d = next, d+n
	}
	if d != len(dst) {
		return fmt.Errorf("%w: the page decompresses to %d bytes, the header says %d", errCorrupt, d, len(dst))
	}
	return nil
}

// decodeSnappyFast decodes the tags of src from s on into dst from d on,
// 16 bytes a tag (see decodeSnappy), while there is room for that, and
// returns where it stopped: at the end of room or at a tag it leaves to
// the careful step.
func decodeSnappyFast(dst, src []byte, s, d int) (int, int) {
	// A tag reads at most 18 bytes (a literal's tag byte and 16 bytes,
	// then the next tag's byte) and writes at most 64, and every pointer
	// stays inside its buffer.
	if !snappyWords || d < 8 || s > len(src)-18 || d > len(dst)-65 {
		return s, d
	}
	sp, dp := unsafe.Pointer(unsafe.SliceData(src)), unsafe.Pointer(unsafe.SliceData(dst))
	sEnd, dEnd := unsafe.Add(sp, len(src)-18), unsafe.Add(dp, len(dst)-65)
	at, to := unsafe.Add(sp, s), unsafe.Add(dp, d)
	// The tag byte is carried from one tag to the next: the next tag's
	// position depends on this one's size, and loading its byte straight
	// from there, rather than the word the offset is read from, keeps the
	// chain from tag to tag short.
	tag := uint64(*(*uint8)(at))
	for uintptr(at) <= uintptr(sEnd) && uintptr(to) <= uintptr(dEnd) {
		lit := -((tag&3 - 1) >> 63) // all ones for a literal
		e := &snappyTable[tag]
		offset := uintptr(*(*uint64)(at)>>8&uint64(e.mask) + e.add)
		d := uintptr(to) - uintptr(dp)
		if offset-8 > d-8 {
			break
		}
		// A literal reads its "copy" from the block's start, which no store
		// still in flight overlaps.
		back := unsafe.Add(to, -int(offset&^uintptr(lit)|d&uintptr(lit)))
		*(*uint64)(to) = *(*uint64)(unsafe.Add(at, 1))&lit | *(*uint64)(back)&^lit
		// The second word is loaded after the first is stored: a copy
		// from 8 to 15 bytes back reads some of it.
		*(*uint64)(unsafe.Add(to, 8)) = *(*uint64)(unsafe.Add(at, 9))&lit | *(*uint64)(unsafe.Add(back, 8))&^lit
		if n := int(e.length); n > 16 {
			// A copy of up to 64 bytes (a literal that long is left to the
			// careful step), 16 bytes at a time from 16 bytes back or more,
			// 8 from 8 to 15 back: each move reads only bytes written.
			if offset >= 16 {
				for i := 16; i < n; i += 16 {
					*(*[16]byte)(unsafe.Add(to, i)) = *(*[16]byte)(unsafe.Add(back, i))
				}
			} else {
				for i := 16; i < n; i += 8 {
					*(*uint64)(unsafe.Add(to, i)) = *(*uint64)(unsafe.Add(back, i))
				}
			}
		}
		to = unsafe.Add(to, e.length)
		at = unsafe.Add(at, e.size)
		tag = uint64(*(*uint8)(at))
	}
	return int(uintptr(at) - uintptr(sp)), int(uintptr(to) - uintptr(dp))
}

// snappyTag parses the tag at src[s]: a literal of n bytes, which start at
// next, with offset 0; or a copy of n bytes from offset bytes back, with
// next the position after it. ok is false where the tag runs past src (a
// literal's bytes are the caller's to check) or a copy's offset is 0.
func snappyTag(src []byte, s int) (n, offset, next int, ok bool) {
	tag := src[s]
	switch tag & 3 {
	case 0:
		x := int(tag >> 2)
		s++
		if x >= 60 {
			k := x - 59 // bytes of the length
			if s+k > len(src) {
				return 0, 0, 0, false
			}
			x = 0
			for i := k - 1; i >= 0; i-- {
				x = x<<8 | int(src[s+i])
			}
			s += k
		}
		return x + 1, 0, s, x+1 > 0
	case 1:
		if s+2 > len(src) {
			return 0, 0, 0, false
		}
		n, offset, next = 4+int(tag>>2)&7, int(tag&0xe0)<<3|int(src[s+1]), s+2
	case 2:
		if s+3 > len(src) {
			return 0, 0, 0, false
		}
		n, offset, next = 1+int(tag>>2), int(binary.LittleEndian.Uint16(src[s+1:])), s+3
	default:
		if s+5 > len(src) {
			return 0, 0, 0, false
		}
		n, offset, next = 1+int(tag>>2), int(binary.LittleEndian.Uint32(src[s+1:])), s+5
	}
	return n, offset, next, offset > 0
}
