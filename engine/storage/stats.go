package storage

import (
	"github.com/parquet-go/parquet-go"

	"cachebook/engine/vec"
)

// ChunkBounds is what the statistics of one column chunk say about its
// values, as engine values.
type ChunkBounds struct {
	// Min and Max are the least and greatest non-NULL values; they are
	// meaningful only when OK is set and AllNull is not.
	Min, Max int64
	// AllNull: every value of the chunk is NULL (the statistics count as
	// many NULLs as the chunk has values, and give no bounds).
	AllNull bool
	// OK: the statistics answer MIN and MAX for the chunk. When false
	// nothing may be concluded: the values must be read.
	OK bool
}

// StatBounds returns the bounds of column col (an index into
// Table.Columns) in row group g from the row group's statistics: their
// min_value and max_value fields only (the deprecated min and max fields
// were written in an order that depended on the writer), which the
// Parquet format orders signed for signed integers and dates and unsigned
// for unsigned ones. It answers for the integer and date columns the
// engine reads as int64 without a change of unit: INT32 (signed, or
// unsigned of 8, 16 or 32 bits) and signed INT64; for any other column,
// or a chunk whose statistics lack min_value or max_value, OK is false.
func (rd *Reader) StatBounds(g, col int) (b ChunkBounds) {
	defer func() {
		if recover() != nil {
			b = ChunkBounds{}
		}
	}()
	t := rd.t
	if col < 0 || col >= len(t.Columns) || t.Columns[col].Err != nil {
		return ChunkBounds{}
	}
	conv := t.convs[col]
	switch t.Columns[col].Type {
	case vec.Int16, vec.Int32, vec.Date:
		switch conv {
		case convInt32, convUint8, convUint16:
		default:
			return ChunkBounds{}
		}
	case vec.Int64:
		if conv != convInt64 && conv != convUint32 {
			return ChunkBounds{}
		}
	default:
		return ChunkBounds{}
	}
	rgs := rd.f.RowGroups()
	if g < 0 || g >= len(rgs) {
		return ChunkBounds{}
	}
	chunks := rgs[g].ColumnChunks()
	leaf := t.leaves[col]
	if leaf >= len(chunks) {
		return ChunkBounds{}
	}
	fc, isFile := chunks[leaf].(*parquet.FileColumnChunk)
	if !isFile {
		return ChunkBounds{}
	}
	mn, mx, ok := fc.Bounds()
	if !ok || mn.IsNull() || mx.IsNull() {
		// A chunk of NULLs only has no bounds; writers that count
		// NULLs say so. A writer that does not leaves the count 0.
		if n := fc.NumValues(); n > 0 && fc.NullCount() == n {
			return ChunkBounds{AllNull: true, OK: true}
		}
		return ChunkBounds{}
	}
	var lo, hi int64
	switch {
	case conv == convInt64 && mn.Kind() == parquet.Int64 && mx.Kind() == parquet.Int64:
		lo, hi = mn.Int64(), mx.Int64()
	case conv == convInt32 && mn.Kind() == parquet.Int32 && mx.Kind() == parquet.Int32:
		lo, hi = int64(mn.Int32()), int64(mx.Int32())
	case mn.Kind() == parquet.Int32 && mx.Kind() == parquet.Int32:
		// Unsigned: the 32 bits are the value.
		lo, hi = int64(uint32(mn.Int32())), int64(uint32(mx.Int32()))
		limit := int64(1)<<32 - 1
		switch conv {
		case convUint8:
			limit = 1<<8 - 1
		case convUint16:
			limit = 1<<16 - 1
		}
		if hi > limit {
			return ChunkBounds{}
		}
	default:
		return ChunkBounds{}
	}
	// Bounds a writer ordered wrongly are not used: for unsigned values
	// ordered as signed ones, a chunk with values on both sides of 2^31
	// has its "minimum" above its "maximum" (on one side the two orders
	// agree), and an 8 or 16 bit value above its range is no value.
	if lo > hi {
		return ChunkBounds{}
	}
	return ChunkBounds{Min: lo, Max: hi, OK: true}
}

// Required reports whether column col (an index into Table.Columns) is a
// REQUIRED column of the file's schema: it holds no NULLs.
func (rd *Reader) Required(col int) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	t := rd.t
	if col < 0 || col >= len(t.Columns) || t.Columns[col].Err != nil {
		return false
	}
	bare, err := t.bare()
	if err != nil || t.leaves[col] >= len(bare) {
		return false
	}
	c := bare[t.leaves[col]]
	return c.MaxDefinitionLevel() == 0 && c.MaxRepetitionLevel() == 0
}
