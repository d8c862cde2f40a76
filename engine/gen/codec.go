package gen

import (
	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go/format"
)

// fastSnappy is parquet's SNAPPY codec using s2's snappy-compatible fast
// encoder (parquet-go's own codec uses the slower "better" mode, which
// dominated generation time). The output is a standard snappy block.
type fastSnappy struct{}

func (fastSnappy) String() string                            { return "SNAPPY" }
func (fastSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }
func (fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst[:cap(dst)], src), nil
}
func (fastSnappy) Decode(dst, src []byte) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst, err
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	return s2.Decode(dst[:n], src)
}
