package agg

import (
	"fmt"
	"math"
	"testing"

	"cachebook/engine/vec"
)

// TestHashStringsBytesOnly: a key's hash depends on its bytes only, not on
// where its vector keeps them or how much room is left after them (the
// path hashShort reads 64 bytes, the copied and the long ones do not),
// and keys of one byte more, one byte less or one byte changed differ.
func TestHashStringsBytesOnly(t *testing.T) {
	h := NewHasher()
	key := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		return b
	}
	seen := map[uint64]string{}
	for n := 0; n <= 2*shortKey+3; n++ {
		k := key(n)
		var want uint64
		for _, pad := range []int{0, 1, shortKey - 1, shortKey, 3 * shortKey} {
			for _, lead := range []int{0, 5} {
				v := vec.NewVector(vec.String, 2)
				v.AppendStr(key(lead))
				v.AppendStr(k)
				v.Bytes = append(make([]byte, 0, len(v.Bytes)+pad), v.Bytes...)
				out := make([]uint64, 2)
				h.Hash([]*vec.Vector{v}, 2, out)
				if pad == 0 && lead == 0 {
					want = out[1]
				} else if out[1] != want {
					t.Fatalf("%d-byte key after %d bytes, %d bytes of room: hash %x, want %x", n, lead, pad, out[1], want)
				}
			}
		}
		if prev, ok := seen[want]; ok {
			t.Fatalf("keys %q and %q hash alike", prev, k)
		}
		seen[want] = string(k)
		for i := 0; i < n; i++ {
			c := append([]byte(nil), k...)
			c[i] ^= 1
			v := vec.NewVector(vec.String, 1)
			v.AppendStr(c)
			out := make([]uint64, 1)
			h.Hash([]*vec.Vector{v}, 1, out)
			if out[0] == want {
				t.Fatalf("%d-byte key: flipping byte %d keeps its hash", n, i)
			}
		}
	}
}

// TestHashStringsSpread: URL-like keys that differ in a few characters
// spread evenly over the top bits (partitions) and the low bits (slots).
func TestHashStringsSpread(t *testing.T) {
	const keys, buckets = 1 << 18, 256
	h := NewHasher()
	v := vec.NewVector(vec.String, keys)
	for i := range keys {
		v.AppendStr([]byte(fmt.Sprintf("http://example.com/page/%d?ref=%d", i, i%7)))
	}
	out := make([]uint64, keys)
	h.Hash([]*vec.Vector{v}, keys, out)
	for _, c := range []struct {
		name  string
		shift uint
	}{{"top bits", 56}, {"low bits", 0}, {"bits 16-23", 16}} {
		var count [buckets]float64
		for _, x := range out {
			count[(x>>c.shift)%buckets]++
		}
		chi := 0.0
		e := float64(keys) / buckets
		for _, k := range count {
			chi += (k - e) * (k - e) / e
		}
		// 255 degrees of freedom: mean 255, standard deviation about 22.6.
		if z := (chi - 255) / math.Sqrt(2*255); z > 6 {
			t.Errorf("%s: chi-square %.0f over %d buckets (z %.1f)", c.name, chi, buckets, z)
		}
	}
}

// TestHashStringsPrefetchEnd: hashing prefetches the keys a few blocks
// ahead, which at the end of a vector may be empty keys at the very end
// of its bytes; whatever the prefetches reach, each key hashes as it does
// alone.
func TestHashStringsPrefetchEnd(t *testing.T) {
	h := NewHasher()
	const n = 5 * hashAhead
	for _, full := range []int{0, 1, hashAhead, n - 1} {
		v := vec.NewVector(vec.String, n)
		for i := range n {
			if i < full {
				v.AppendStr([]byte(fmt.Sprintf("http://example.com/%d", i)))
			} else {
				v.AppendStr(nil)
			}
		}
		v.Bytes = v.Bytes[:len(v.Bytes):len(v.Bytes)]
		out := make([]uint64, n)
		h.Hash([]*vec.Vector{v}, n, out)
		for i := range n {
			one := vec.NewVector(vec.String, 1)
			one.AppendStr(v.Str(i))
			want := make([]uint64, 1)
			h.Hash([]*vec.Vector{one}, 1, want)
			if out[i] != want[0] {
				t.Fatalf("%d keys of %d not empty: key %d hashes to %x alone, %x in the vector", full, n, i, want[0], out[i])
			}
		}
	}
}
