package agg

import (
	"context"
	"fmt"
	"testing"

	"cachebook/engine/vec"
)

// TestTraceGenericStringMatches pins the traced string-key pass against
// the real naive aggregation: the same groups, the same final table size,
// and every reported access inside its buffer (stored keys, offsets,
// slots, the morsels' columns), NULL keys included.
func TestTraceGenericStringMatches(t *testing.T) {
	specs := []Spec{{Kind: CountStar}, {Kind: Sum, In: vec.Int64}}
	for _, distinct := range []int{1, 9, 3000, 40000} {
		keys := randomKeys(100000, distinct, uint64(distinct)+5)
		col := vec.NewVector(vec.String, len(keys))
		col.Valid = make([]bool, 0, len(keys))
		for i, k := range keys {
			if i%97 == 0 {
				col.AppendNull()
				continue
			}
			col.AppendStr([]byte(fmt.Sprintf("key-%d", k)))
		}
		for i := len(col.Valid); i < col.Len; i++ {
			col.Valid = append(col.Valid, true)
		}
		// The real run.
		var done bool
		src := func(int) (Input, bool, error) {
			if done {
				return Input{}, false, nil
			}
			done = true
			return Input{Keys: []*vec.Vector{col}, Args: []*vec.Vector{nil, {Type: vec.Int64, I64: keys, Len: len(keys)}}, N: col.Len}, true, nil
		}
		out, err := Aggregate(context.Background(), []vec.Type{vec.String}, specs, Config{Strategy: Naive}, src)
		if err != nil {
			t.Fatal(err)
		}
		// The traced run, in morsels of 4096 rows.
		rec := &recorder{}
		offBuf := rec.Alloc(0, int64(col.Len+1)*4, false, false)
		bytesBuf := rec.Alloc(0, int64(len(col.Bytes)), false, false)
		args := rec.Alloc(0, int64(col.Len)*8, false, false)
		var ms []TraceStringMorsel
		for lo := 0; lo < col.Len; lo += 4096 {
			hi := min(lo+4096, col.Len)
			v := &vec.Vector{Type: vec.String, Len: hi - lo, Bytes: col.Bytes, Offsets: col.Offsets[lo : hi+1], Valid: col.Valid[lo:hi]}
			ms = append(ms, TraceStringMorsel{Keys: v, OffBuf: offBuf, OffOff: int64(lo) * 4, BytesBuf: bytesBuf, BytesOff: int64(col.Offsets[lo]),
				ArgBufs: []int{-1, args}, ArgOff: int64(lo) * 8})
		}
		slotsBefore := len(rec.sizes)
		groups, err := TraceGenericString(context.Background(), specs, ms, rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if groups != out.Groups {
			t.Errorf("%d distinct: traced %d groups, real %d", distinct, groups, out.Groups)
		}
		// The largest slot array the trace allocated is the real table's.
		var largest int64
		for _, n := range rec.sizes[slotsBefore:] {
			if n%16 == 0 && n/16 == int64(out.TableSlots) {
				largest = n / 16
			}
		}
		if largest != int64(out.TableSlots) {
			t.Errorf("%d distinct: no traced slot array of the real table's %d slots", distinct, out.TableSlots)
		}
		if rec.bad != "" {
			t.Errorf("%d distinct: %s", distinct, rec.bad)
		}
		if len(rec.phases) != 1 || rec.phases[0] != "aggregate" {
			t.Errorf("phases %v", rec.phases)
		}
	}
}
