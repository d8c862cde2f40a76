//go:build !amd64

package agg

// storeLine copies the 64-byte line src to dst; amd64 uses non-temporal
// stores (storeline_amd64.go).
func storeLine(dst, src *[wcLine]int64) { *dst = *src }

// storeFence has nothing to order where storeLine stores as usual.
func storeFence() {}
