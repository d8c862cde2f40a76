package engine

import (
	"cachebook/engine/vec"
)

// sliceVec returns rows [a, b) of v without copying; nil stays nil (a
// column the query does not read).
func sliceVec(v *vec.Vector, a, b int) *vec.Vector {
	if v == nil {
		return nil
	}
	return v.Slice(a, b)
}

// gather returns the rows of v at the indices sel; nil stays nil.
func gather(v *vec.Vector, sel []int32) *vec.Vector {
	if v == nil {
		return nil
	}
	return v.Gather(sel)
}

// emptyVec returns an empty vector of type t ready for appends.
func emptyVec(t vec.Type) *vec.Vector {
	v := &vec.Vector{Type: t}
	if t == vec.String {
		v.Offsets = []uint32{0}
	}
	return v
}
