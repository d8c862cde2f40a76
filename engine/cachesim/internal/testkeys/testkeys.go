// Package testkeys generates the GROUP BY keys that the cache model's tests
// and their cachegrind helper both use, so that the two see the same
// input.
package testkeys

import "math/rand/v2"

// Keys returns n keys with exactly groups distinct values (each appears at
// least once, the rest uniformly), shuffled; the same arguments give the
// same keys.
func Keys(n, groups int, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 2))
	keys := make([]int64, n)
	for i := range keys {
		if i < groups {
			keys[i] = int64(i) * 7919
		} else {
			keys[i] = int64(r.IntN(groups)) * 7919
		}
	}
	r.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}
