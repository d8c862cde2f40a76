package cachesim

import (
	"context"
	"fmt"
	"math/bits"
	"strings"

	"cachebook/engine/units"
)

// PatternBase is the address of a pattern's first array: 2 MiB aligned and
// on 4 KiB pages (below HugeBase).
const PatternBase = 1 << 32

// PatternNames lists the named access patterns, in the order a lesson
// introduces them.
var PatternNames = []string{"sequential", "strided", "random", "chase", "transpose", "transpose-blocked", "hashprobe"}

// Pattern is a named access pattern over a working set, CS:APP style, so a
// learner can predict miss counts and check them. Every pattern reads or
// writes 8-byte words; testdata/patterns.c performs exactly the same
// accesses, for the comparison with cachegrind.
type Pattern struct {
	// Name is one of PatternNames:
	//   sequential: Passes passes of 8-byte reads over Size bytes;
	//   strided: Passes passes reading one word every Stride bytes of Size;
	//   random: N reads of words chosen by a 64-bit LCG in Size bytes;
	//   chase: N dependent reads following a random cycle through the
	//          Size/64 lines (set up first by one write per line);
	//   transpose, transpose-blocked: B = Aᵀ for two Dim×Dim matrices of
	//          int64, row by row or in Block×Block tiles;
	//   hashprobe: N probes of keys 0..N-1 hashed (Mix64) into a table of
	//          Size bytes of 16-byte slots, one read per probe.
	Name   string
	Size   int64
	Stride int64
	N      int64
	Passes int
	Dim    int
	Block  int
}

// DefaultPattern returns the pattern name with the defaults of a cachesim
// cell: 4 MiB, 64-byte stride, 1M accesses, 2 passes, 512×512 matrices,
// 8×8 tiles.
func DefaultPattern(name string) Pattern {
	return Pattern{Name: name, Size: 4 << 20, Stride: 64, N: 1 << 20, Passes: 2, Dim: 512, Block: 8}
}

// ParsePattern applies space-separated overrides (size=, stride=, n=,
// passes=, dim=, block=) to p.
func ParsePattern(p Pattern, spec string) (Pattern, error) {
	for _, f := range strings.Fields(spec) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return p, fmt.Errorf("cachesim: %q: want key=value", f)
		}
		n, err := units.ParseBytes(v)
		if err != nil {
			return p, fmt.Errorf("cachesim: %s: %w", k, err)
		}
		switch strings.ToLower(k) {
		case "size":
			p.Size = n
		case "stride":
			p.Stride = n
		case "n":
			p.N = n
		case "passes":
			p.Passes = int(min(n, 1<<20))
		case "dim":
			p.Dim = int(min(n, 1<<20))
		case "block":
			p.Block = int(min(n, 1<<20))
		default:
			return p, fmt.Errorf("cachesim: unknown pattern key %q", k)
		}
	}
	return p, p.Validate()
}

// MaxPatternBytes bounds a pattern's working set.
const MaxPatternBytes = 16 << 30

// MaxPatternAccesses bounds the accesses of one pattern run.
const MaxPatternAccesses = 1 << 31

// Validate checks the pattern's parameters.
func (p Pattern) Validate() error {
	known := false
	for _, n := range PatternNames {
		known = known || n == p.Name
	}
	if !known {
		return fmt.Errorf("cachesim: unknown pattern %q (want one of %s)", p.Name, strings.Join(PatternNames, ", "))
	}
	switch p.Name {
	case "transpose", "transpose-blocked":
		if p.Dim < 1 || int64(p.Dim)*int64(p.Dim)*16 > MaxPatternBytes {
			return fmt.Errorf("cachesim: %s: dim must be 1..%d, got %d", p.Name, 32768, p.Dim)
		}
		if p.Name == "transpose-blocked" && (p.Block < 1 || p.Block > p.Dim) {
			return fmt.Errorf("cachesim: %s: block must be 1..dim, got %d", p.Name, p.Block)
		}
		return nil
	}
	if p.Size < 64 || p.Size > MaxPatternBytes || p.Size%64 != 0 {
		return fmt.Errorf("cachesim: %s: size must be a multiple of 64 B up to %s, got %d", p.Name, units.FormatBytes(MaxPatternBytes), p.Size)
	}
	switch p.Name {
	case "sequential", "strided":
		if p.Passes < 1 {
			return fmt.Errorf("cachesim: %s: passes must be positive", p.Name)
		}
		if p.Name == "strided" && (p.Stride < 8 || p.Stride%8 != 0) {
			return fmt.Errorf("cachesim: strided: stride must be a positive multiple of 8 B, got %d", p.Stride)
		}
		if p.accesses() > MaxPatternAccesses {
			return fmt.Errorf("cachesim: %s: %d accesses, at most %d", p.Name, p.accesses(), int64(MaxPatternAccesses))
		}
	default:
		if p.N < 0 || p.N > MaxPatternAccesses {
			return fmt.Errorf("cachesim: %s: n must be 0..%d, got %d", p.Name, int64(MaxPatternAccesses), p.N)
		}
		if (p.Name == "chase" || p.Name == "hashprobe") && bits.OnesCount64(uint64(p.Size)) != 1 {
			return fmt.Errorf("cachesim: %s: size must be a power of two, got %s", p.Name, units.FormatBytes(p.Size))
		}
	}
	return nil
}

func (p Pattern) accesses() int64 {
	switch p.Name {
	case "sequential":
		return int64(p.Passes) * p.Size / 8
	case "strided":
		return int64(p.Passes) * ((p.Size + p.Stride - 1) / p.Stride)
	case "transpose", "transpose-blocked":
		return 2 * int64(p.Dim) * int64(p.Dim)
	}
	return p.N
}

// String describes the pattern with its parameters.
func (p Pattern) String() string {
	switch p.Name {
	case "sequential":
		return fmt.Sprintf("sequential: %d passes over %s", p.Passes, units.FormatBytes(p.Size))
	case "strided":
		return fmt.Sprintf("strided: %d passes over %s, stride %d B", p.Passes, units.FormatBytes(p.Size), p.Stride)
	case "random":
		return fmt.Sprintf("random: %d reads in %s", p.N, units.FormatBytes(p.Size))
	case "chase":
		return fmt.Sprintf("chase: %d dependent reads over a random cycle of %d lines (%s)", p.N, p.Size/64, units.FormatBytes(p.Size))
	case "transpose":
		return fmt.Sprintf("transpose: %d×%d int64, row by row", p.Dim, p.Dim)
	case "transpose-blocked":
		return fmt.Sprintf("transpose-blocked: %d×%d int64 in %d×%d tiles", p.Dim, p.Dim, p.Block, p.Block)
	case "hashprobe":
		return fmt.Sprintf("hashprobe: %d probes into a %s table of 16 B slots", p.N, units.FormatBytes(p.Size))
	}
	return p.Name
}

// checkEvery is how many modelled accesses a pattern runs between two
// looks at its context: a few milliseconds of work at the model's slowest
// (about a microsecond an access when every level misses), so that an
// interrupt stops it well within the kernel's 200 ms, and a negligible
// cost at its fastest (a context check per 4096 accesses).
const checkEvery = 4096

// lcg advances the patterns' 64-bit linear congruential generator (Knuth's
// MMIX constants).
func lcg(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

// scramble is a bijection on the low k bits: the chase's cycle visits line
// scramble(i) i-th.
func scramble(i uint64, k uint) uint64 {
	mask := uint64(1)<<k - 1
	h := k/2 + 1
	i = (i * 0x9e3779b97f4a7c15) & mask
	i ^= i >> h
	i = (i * 0xbf58476d1ce4e5b9) & mask
	i ^= i >> h
	return i
}

// mix64 is engine/agg's Mix64 (fmix64), repeated here so that this package
// imports nothing of the engine.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Run performs the pattern on s: its setup (the chase's writes), then the
// pattern itself, and returns the counts of the pattern alone. The context
// is checked every checkEvery accesses.
func (p Pattern) Run(ctx context.Context, s *Sim) (Stats, error) {
	if err := p.Validate(); err != nil {
		return Stats{}, err
	}
	const base = PatternBase
	// left counts the accesses down to the next look at ctx; check is
	// called after every access (or, in the transposes, every row with
	// the row's accesses).
	left := int64(checkEvery)
	check := func(n int64) error {
		if left -= n; left > 0 {
			return nil
		}
		left = checkEvery
		return ctx.Err()
	}
	words := uint64(p.Size / 8)
	switch p.Name {
	case "chase":
		lines := uint64(p.Size / 64)
		k := uint(bits.TrailingZeros64(lines))
		for i := uint64(0); i < lines; i++ {
			s.Store(base+64*scramble(i, k), 8)
			if err := check(1); err != nil {
				return Stats{}, err
			}
		}
		before := s.Mark()
		// The chase reads line scramble(i) at step i: a cycle of length
		// lines.
		for i := int64(0); i < p.N; i++ {
			s.Load(base+64*scramble(uint64(i)%lines, k), 8)
			if err := check(1); err != nil {
				return Stats{}, err
			}
		}
		return s.Since(before), nil
	}
	before := s.Mark()
	var err error
	switch p.Name {
	case "sequential":
		for pass := 0; pass < p.Passes && err == nil; pass++ {
			for i := uint64(0); i < words; i++ {
				s.Load(base+8*i, 8)
				if err = check(1); err != nil {
					break
				}
			}
		}
	case "strided":
		for pass := 0; pass < p.Passes && err == nil; pass++ {
			for off := uint64(0); off < uint64(p.Size); off += uint64(p.Stride) {
				s.Load(base+off, 8)
				if err = check(1); err != nil {
					break
				}
			}
		}
	case "random":
		x := uint64(1)
		for i := int64(0); i < p.N; i++ {
			x = lcg(x)
			s.Load(base+8*((x>>33)%words), 8)
			if err = check(1); err != nil {
				break
			}
		}
	case "hashprobe":
		mask := uint64(p.Size/16 - 1)
		for k := int64(0); k < p.N; k++ {
			s.Load(base+16*(mix64(uint64(k))&mask), 8)
			if err = check(1); err != nil {
				break
			}
		}
	case "transpose", "transpose-blocked":
		n := uint64(p.Dim)
		a, b := uint64(base), uint64(base)+n*n*8
		blk := n
		if p.Name == "transpose-blocked" {
			blk = uint64(p.Block)
		}
	tiles:
		for ii := uint64(0); ii < n; ii += blk {
			for jj := uint64(0); jj < n; jj += blk {
				for i := ii; i < min(ii+blk, n); i++ {
					for j := jj; j < min(jj+blk, n); j++ {
						s.Load(a+8*(i*n+j), 8)
						s.Store(b+8*(j*n+i), 8)
					}
					if err = check(2 * int64(min(jj+blk, n)-jj)); err != nil {
						break tiles
					}
				}
			}
		}
	}
	if err != nil {
		return Stats{}, err
	}
	return s.Since(before), nil
}
