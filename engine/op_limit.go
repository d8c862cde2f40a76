package engine

import (
	"fmt"
	"time"

	"cachebook/engine/vec"
)

// limitOp passes on rows offset to offset+limit of its input and stops
// pulling once it has them: a LIMIT without ORDER BY stops the scan.
type limitOp struct {
	opBase
	limit, offset int64 // limit -1: none
	seen          int64 // rows of the input consumed (skipped or passed)
}

func (l *limitOp) detail() []string {
	if l.limit < 0 {
		return []string{fmt.Sprintf("offset %d", l.offset)}
	}
	return []string{fmt.Sprintf("limit %d offset %d", l.limit, l.offset)}
}

func (l *limitOp) next(x *execCtx, w int) (*vec.Batch, error) {
	for {
		if l.limit >= 0 && l.seen >= l.offset+l.limit {
			return nil, nil
		}
		b, err := l.children[0].next(x, w)
		if err != nil || b == nil {
			return nil, err
		}
		t0 := time.Now()
		l.stats.rowsIn.Add(int64(b.Len))
		lo := max(0, l.offset-l.seen)
		hi := int64(b.Len)
		if l.limit >= 0 {
			hi = min(hi, l.offset+l.limit-l.seen)
		}
		l.seen += int64(b.Len)
		if lo >= hi {
			l.stats.since(t0)
			continue
		}
		out := b
		if lo > 0 || hi < int64(b.Len) {
			out = &vec.Batch{Vecs: make([]*vec.Vector, len(b.Vecs)), Len: int(hi - lo)}
			for i, v := range b.Vecs {
				out.Vecs[i] = sliceVec(v, int(lo), int(hi))
			}
		}
		l.stats.rowsOut.Add(int64(out.Len))
		l.stats.since(t0)
		return out, nil
	}
}
