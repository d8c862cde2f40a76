package engine

import (
	"cachebook/engine/vec"
)

// sliceVec returns rows [a, b) of v without copying.
func sliceVec(v *vec.Vector, a, b int) *vec.Vector {
	if v == nil {
		return nil
	}
	s := &vec.Vector{Type: v.Type, Len: b - a}
	switch v.Type {
	case vec.Null:
	case vec.String:
		s.Bytes, s.Offsets = v.Bytes, v.Offsets[a:b+1]
	case vec.Float64:
		s.F64 = v.F64[a:b]
	default:
		s.I64 = v.I64[a:b]
	}
	if v.Valid != nil {
		s.Valid = v.Valid[a:b]
	}
	return s
}

// gather returns the rows of v at the indices sel, in that order.
func gather(v *vec.Vector, sel []int32) *vec.Vector {
	if v == nil {
		return nil
	}
	n := len(sel)
	out := &vec.Vector{Type: v.Type, Len: n}
	switch v.Type {
	case vec.Null:
	case vec.String:
		size := 0
		for _, i := range sel {
			size += int(v.Offsets[i+1] - v.Offsets[i])
		}
		out.Bytes = make([]byte, 0, size)
		out.Offsets = make([]uint32, 1, n+1)
		for _, i := range sel {
			out.Bytes = append(out.Bytes, v.Bytes[v.Offsets[i]:v.Offsets[i+1]]...)
			out.Offsets = append(out.Offsets, uint32(len(out.Bytes)))
		}
	case vec.Float64:
		out.F64 = make([]float64, n)
		for j, i := range sel {
			out.F64[j] = v.F64[i]
		}
	default:
		out.I64 = make([]int64, n)
		for j, i := range sel {
			out.I64[j] = v.I64[i]
		}
	}
	if v.Valid != nil {
		out.Valid = make([]bool, n)
		for j, i := range sel {
			out.Valid[j] = v.Valid[i]
		}
	}
	return out
}

// appendVec appends all rows of src to dst (same type).
func appendVec(dst, src *vec.Vector) {
	if src.Len == 0 {
		return
	}
	if src.Valid != nil && dst.Valid == nil {
		dst.Valid = make([]bool, dst.Len, dst.Len+src.Len)
		for i := range dst.Valid {
			dst.Valid[i] = true
		}
	}
	if dst.Valid != nil {
		if src.Valid != nil {
			dst.Valid = append(dst.Valid, src.Valid[:src.Len]...)
		} else {
			for i := 0; i < src.Len; i++ {
				dst.Valid = append(dst.Valid, true)
			}
		}
	}
	switch dst.Type {
	case vec.Null:
	case vec.Float64:
		dst.F64 = append(dst.F64, src.F64[:src.Len]...)
	case vec.String:
		if len(dst.Offsets) == 0 {
			dst.Offsets = append(dst.Offsets, 0)
		}
		base := uint32(len(dst.Bytes))
		start := src.Offsets[0]
		dst.Bytes = append(dst.Bytes, src.Bytes[start:src.Offsets[src.Len]]...)
		for _, o := range src.Offsets[1 : src.Len+1] {
			dst.Offsets = append(dst.Offsets, base+o-start)
		}
	default:
		dst.I64 = append(dst.I64, src.I64[:src.Len]...)
	}
	dst.Len += src.Len
}

// emptyVec returns an empty vector of type t ready for appends.
func emptyVec(t vec.Type) *vec.Vector {
	v := &vec.Vector{Type: t}
	if t == vec.String {
		v.Offsets = []uint32{0}
	}
	return v
}

// vecBytes estimates the memory held by v.
func vecBytes(v *vec.Vector) int64 {
	if v == nil {
		return 0
	}
	return int64(len(v.I64))*8 + int64(len(v.F64))*8 + int64(len(v.Bytes)) + int64(len(v.Offsets))*4 + int64(len(v.Valid))
}
