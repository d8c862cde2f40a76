package engine

import (
	"math"
	"math/bits"
)

// hll is a HyperLogLog sketch with 2^12 registers (about 1.6% standard
// error), used by the auto strategy to estimate the number of groups.
type hll struct {
	reg [1 << 12]uint8
}

func (h *hll) add(x uint64) {
	i := x >> 52
	r := uint8(bits.LeadingZeros64(x<<12|1<<11)) + 1
	if r > h.reg[i] {
		h.reg[i] = r
	}
}

func (h *hll) estimate() int64 {
	const m = float64(len(h.reg))
	var sum float64
	zeros := 0
	for _, r := range h.reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting for small sets
	}
	return int64(e + 0.5)
}
