package agg

import (
	"hash/maphash"
	"math/bits"
	"unsafe"

	"cachebook/engine/vec"
)

// Hashing short strings without a branch on their length. maphash (AES on
// amd64) picks its code by the string's length, and keys of mixed lengths
// (URLs: most between 10 and 64 bytes) mispredict that choice about as
// often as not, which costs more than the hashing. A key of at most
// shortKey bytes is read instead as eight 8-byte words, the bytes past its
// end masked to zero, and the words are folded pairwise through 128-bit
// products, as wyhash folds its input, under secrets drawn from the
// hasher's random seed. The length is folded in, so "a" and "a\x00" differ.
// Reading 64 bytes from the key's start stays within its vector's
// capacity; a key too near the end of it is copied out first, and a
// longer key is hashed by maphash: either way the hash depends only on the
// key's bytes.

// shortKey is the longest key hashed by hashShort.
const shortKey = 64

// keyMask holds shortKey bytes of ones and then shortKey of zeros: the
// shortKey bytes from keyMask[shortKey-n] mask a key of n bytes.
var keyMask = func() (m [2 * shortKey]byte) {
	for i := range shortKey {
		m[i] = 0xff
	}
	return m
}()

// shortSecrets are the secrets of hashShort, drawn from a Hasher's seed.
type shortSecrets [10]uint64

// newShortSecrets derives the secrets of hashShort from seed.
func newShortSecrets(seed maphash.Seed) shortSecrets {
	var s shortSecrets
	for i := range s {
		s[i] = maphash.Bytes(seed, []byte{byte(i)})
	}
	return s
}

// fold returns the two halves of the 128-bit product of a and b, xored.
func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hashShort hashes the n bytes at p (n <= shortKey), reading shortKey
// bytes from p.
func (s *shortSecrets) hashShort(p unsafe.Pointer, n int) uint64 {
	w := (*[8]uint64)(p)
	m := (*[8]uint64)(unsafe.Pointer(&keyMask[shortKey-n]))
	a := fold(w[0]&m[0]^s[0], w[1]&m[1]^s[1])
	b := fold(w[2]&m[2]^s[2], w[3]&m[3]^s[3])
	c := fold(w[4]&m[4]^s[4], w[5]&m[5]^s[5])
	d := fold(w[6]&m[6]^s[6], w[7]&m[7]^s[7])
	return fold(a^c^uint64(n)^s[8], b^d^s[9])
}

// hashString returns the hash of the key data[from:to], data being a
// vector's bytes, where hashStrings cannot read shortKey bytes from the
// key's start: a longer key, or one too near the end of data's room.
func (h *Hasher) hashString(data []byte, from, to int) uint64 {
	n := to - from
	if n > shortKey {
		return maphash.Bytes(h.seed, data[from:to])
	}
	var buf [shortKey]byte
	copy(buf[:], data[from:to])
	return h.short.hashShort(unsafe.Pointer(&buf), n)
}

// hashAhead is how many keys ahead of the one it hashes hashStrings
// prefetches, a block of prefetchBlock keys at a time.
const hashAhead = 32

// hashStrings sets out[i] (first) or combines into it the hash of row i of
// the string vector k, for the n rows. The keys are read once, in order,
// and in the aggregate phase they come from memory, where the hardware's
// own prefetching falls behind the hashing: the keys two blocks on are
// prefetched as it goes.
func (h *Hasher) hashStrings(k *vec.Vector, n int, out []uint64, first bool) {
	data, offs := k.Bytes, k.Offsets[:n+1]
	base, room := unsafe.Pointer(unsafe.SliceData(data)), cap(data)-shortKey
	s := &h.short
	for i := range out[:n] {
		if i%prefetchBlock == 0 && i+hashAhead < n {
			if a := int(offs[i+hashAhead]); a < len(data) {
				b := int(offs[min(i+hashAhead+prefetchBlock, n)])
				prefetchLines(unsafe.Add(base, a), (b-a)/64+1)
			}
		}
		var x uint64
		from, to := int(offs[i]), int(offs[i+1])
		switch {
		case k.Valid != nil && !k.Valid[i]:
			x = nullHash
		case to-from <= shortKey && from <= room:
			x = s.hashShort(unsafe.Add(base, from), to-from)
		default:
			x = h.hashString(data, from, to)
		}
		out[i] = combine(first, out[i], x)
	}
}
