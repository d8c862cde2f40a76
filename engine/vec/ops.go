package vec

import "fmt"

// Slice returns rows [a, b) of v without copying.
func (v *Vector) Slice(a, b int) *Vector {
	s := &Vector{Type: v.Type, Len: b - a}
	switch v.Type {
	case Null:
	case String:
		s.Bytes, s.Offsets = v.Bytes, v.Offsets[a:b+1]
	case Float64, Float32:
		s.F64 = v.F64[a:b]
	default:
		s.I64 = v.I64[a:b]
	}
	if v.Valid != nil {
		s.Valid = v.Valid[a:b]
	}
	return s
}

// Gather returns the rows of v at the indices sel, in that order.
func (v *Vector) Gather(sel []int32) *Vector {
	n := len(sel)
	out := &Vector{Type: v.Type, Len: n}
	switch v.Type {
	case Null:
	case String:
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
	case Float64, Float32:
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

// MaxStringBytes is the most string data one vector can hold: offsets
// are 32-bit.
const MaxStringBytes = 1<<32 - 1

// Concat returns the rows of parts, in order, in one vector of type t. It
// sizes every array once from the parts' lengths before appending them, so
// it copies each row once and touches no more fresh memory than the result
// needs, where appending to an empty vector grows the arrays by doubling
// (copying the rows again at each step). A String result longer than
// MaxStringBytes is refused.
func Concat(t Type, parts []*Vector) (*Vector, error) {
	rows, size, nullable := 0, 0, false
	for _, p := range parts {
		rows += p.Len
		if t == String && p.Len > 0 {
			size += int(p.Offsets[p.Len] - p.Offsets[0])
		}
		nullable = nullable || p.Valid != nil
	}
	if size > MaxStringBytes {
		return nil, fmt.Errorf("%d bytes of strings, more than one column can hold (%d)", size, MaxStringBytes)
	}
	out := &Vector{Type: t}
	if t != Null {
		out = NewVector(t, rows)
	}
	if t == String {
		out.Bytes = make([]byte, 0, size)
	}
	if nullable {
		out.Valid = make([]bool, 0, rows)
	}
	for _, p := range parts {
		out.AppendVector(p) // within the capacity reserved above
	}
	return out, nil
}

// AppendVector appends all rows of src, which has v's type.
func (v *Vector) AppendVector(src *Vector) {
	if src.Len == 0 {
		return
	}
	if src.Valid != nil && v.Valid == nil {
		v.Valid = make([]bool, v.Len, v.Len+src.Len)
		for i := range v.Valid {
			v.Valid[i] = true
		}
	}
	if v.Valid != nil {
		if src.Valid != nil {
			v.Valid = append(v.Valid, src.Valid[:src.Len]...)
		} else {
			for i := 0; i < src.Len; i++ {
				v.Valid = append(v.Valid, true)
			}
		}
	}
	switch v.Type {
	case Null:
	case Float64, Float32:
		v.F64 = append(v.F64, src.F64[:src.Len]...)
	case String:
		if len(v.Offsets) == 0 {
			v.Offsets = append(v.Offsets, 0)
		}
		base := uint32(len(v.Bytes))
		start := src.Offsets[0]
		v.Bytes = append(v.Bytes, src.Bytes[start:src.Offsets[src.Len]]...)
		for _, o := range src.Offsets[1 : src.Len+1] {
			v.Offsets = append(v.Offsets, base+o-start)
		}
	default:
		v.I64 = append(v.I64, src.I64[:src.Len]...)
	}
	v.Len += src.Len
}
