// Package agg holds the hash tables, aggregate states and partitioning used
// by the engine's GROUP BY operator. It knows nothing of SQL: the operator
// hands it key and input vectors and receives one row per group.
//
// Two families of strategies share these pieces. Naive aggregation keeps one
// hash table for all groups and updates it row by row, the article's
// baseline: with millions of groups nearly every row misses the caches.
// Radix aggregation first scatters every row (its hash, keys and aggregate
// inputs) into 2^bits partitions chosen by the top bits of the hash, then
// aggregates one partition at a time in a table small enough to stay in
// cache, reusing the stored hash. With several workers each scatters its own
// morsels into its own partitions and then partitions are aggregated in
// parallel, one worker per partition, with no locks and no shared tables.
//
// Each strategy is an Aggregator (agg.go), one file each: global.go,
// naive.go, radix.go (with preagg.go's pre-aggregation) and count.go (the
// tuned integer count(*) loop of intcount.go, naive and radix). Its caller
// owns the workers and drives it as a sink (Sink, Flush per worker), then
// Finalize, then as a source of the groups, a part at a time (Next), each
// part charged to the Budget until its consumer drops it. New picks the
// Aggregator; Aggregate (drive.go) runs one to the end on goroutines of
// its own, for tests and the cache model's tools.
package agg

import (
	"hash/maphash"
	"math"

	"cachebook/engine/vec"
)

// Mix64 is the finaliser of MurmurHash3 (fmix64): a fast bijective mixer
// whose top and bottom bits both depend on every input bit, so partition
// bits (top) and slot bits (bottom) can be taken from disjoint ends.
func Mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

const nullHash = 0x9e3779b97f4a7c15

// Hasher hashes key columns a batch at a time. The zero value is not usable;
// use NewHasher. A Hasher is safe for concurrent use: the seed is read-only.
type Hasher struct {
	seed  maphash.Seed
	short shortSecrets // the secrets of short string keys (strhash.go)
	plain bool         // never pack keys (Config.PlainKeys)
}

// NewHasher returns a Hasher with a fresh random seed for string keys.
func NewHasher() *Hasher {
	seed := maphash.MakeSeed()
	return &Hasher{seed: seed, short: newShortSecrets(seed)}
}

// Hash fills out[:n] with the combined hash of the key vectors' rows.
//
// Several fixed-width integer keys that fit in two words hash as their
// packed words (packed.go); the others combine one hash per column.
func (h *Hasher) Hash(keys []*vec.Vector, n int, out []uint64) {
	if len(keys) >= 2 && !h.plain {
		if l := packLayoutOfKeys(keys); l.words > 0 {
			l.hash(keys, n, out)
			return
		}
	}
	h.hashColumns(keys, n, out)
}

// plainKeys returns a Hasher with h's seed that never packs keys.
func (h *Hasher) plainKeys() *Hasher { return &Hasher{seed: h.seed, short: h.short, plain: true} }

// hashColumns is Hash combining one hash per key column.
func (h *Hasher) hashColumns(keys []*vec.Vector, n int, out []uint64) {
	for c, k := range keys {
		first := c == 0
		switch {
		case k.Type == vec.Null:
			for i := 0; i < n; i++ {
				out[i] = combine(first, out[i], nullHash)
			}
		case k.Type == vec.String:
			h.hashStrings(k, n, out, first)
		case k.Type.IsFloat():
			for i := 0; i < n; i++ {
				var x uint64
				if k.Valid != nil && !k.Valid[i] {
					x = nullHash
				} else {
					x = Mix64(FloatBits(k.F64[i]))
				}
				out[i] = combine(first, out[i], x)
			}
		default:
			ks := k.I64[:n]
			if first && k.Valid == nil {
				for i, v := range ks {
					out[i] = Mix64(uint64(v))
				}
				continue
			}
			for i, v := range ks {
				x := Mix64(uint64(v))
				if k.Valid != nil && !k.Valid[i] {
					x = nullHash
				}
				out[i] = combine(first, out[i], x)
			}
		}
	}
}

func combine(first bool, acc, x uint64) uint64 {
	if first {
		return x
	}
	return Mix64(acc*31 ^ x)
}

// FloatBits normalises -0 to 0 and every NaN to one NaN so that equal values
// (in the GROUP BY sense) hash equally.
func FloatBits(f float64) uint64 {
	if f == 0 {
		return 0
	}
	if f != f {
		return 0x7ff8000000000001
	}
	return math.Float64bits(f)
}
