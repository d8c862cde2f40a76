//go:build !amd64

package agg

// storeLine copies the 64-byte line src to dst; amd64 uses non-temporal
// stores (storeline_amd64.go). It copies word by word: a whole-array
// assignment compiles to WebAssembly's memory.copy, which V8 runs as a
// call into its runtime, dear for 64 bytes; eight loads and stores are
// what arm64 compiles either way.
func storeLine(dst, src *[wcLine]int64) {
	dst[0], dst[1], dst[2], dst[3] = src[0], src[1], src[2], src[3]
	dst[4], dst[5], dst[6], dst[7] = src[4], src[5], src[6], src[7]
}

// storeFence has nothing to order where storeLine stores as usual.
func storeFence() {}
