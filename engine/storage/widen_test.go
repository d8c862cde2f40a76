package storage

import "testing"

// TestWidenInt32 checks the written-out widening loops against the
// meaning of each conversion, on values that differ between them.
func TestWidenInt32(t *testing.T) {
	src := []int32{0, 1, -1, 127, 128, 255, 256, 32767, -32768, 65535, 65536, -2147483648, 2147483647}
	idx := []int32{12, 0, 2, 2, 5, 8, 11}
	for _, tc := range []struct {
		c    conv
		want func(int32) int64
	}{
		{convInt32, func(x int32) int64 { return int64(x) }},
		{convUint8, func(x int32) int64 { return int64(uint8(x)) }},
		{convUint16, func(x int32) int64 { return int64(uint16(x)) }},
		{convUint32, func(x int32) int64 { return int64(uint32(x)) }},
	} {
		d := make([]int64, len(src))
		widenInt32(tc.c, d, src)
		for i, x := range src {
			if d[i] != tc.want(x) {
				t.Errorf("conversion %d of %d: got %d, want %d", tc.c, x, d[i], tc.want(x))
			}
		}
		d = make([]int64, len(idx))
		widenInt32At(tc.c, d, src, idx)
		for i, j := range idx {
			if d[i] != tc.want(src[j]) {
				t.Errorf("conversion %d of src[%d]=%d: got %d, want %d", tc.c, j, src[j], d[i], tc.want(src[j]))
			}
		}
	}
}
