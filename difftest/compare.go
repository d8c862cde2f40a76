package difftest

import (
	"fmt"
	"strings"
)

// Reference is DuckDB's answer to a query, prepared for comparison: the
// full result of the query without LIMIT and OFFSET, in DuckDB's order when
// the query has ORDER BY, with the sort key values of every row.
type Reference struct {
	Shape *Shape
	// Full is the reference result; its first NumOutput columns are the
	// query's output, any further columns are appended sort keys.
	Full      *Table
	NumOutput int
	Keys      []KeyRef
}

// NewReference pairs a parsed query with DuckDB's result of the statement
// returned by shape.OrderedQuery.
func NewReference(shape *Shape, full *Table, keys []KeyRef) (*Reference, error) {
	hidden := 0
	for _, k := range keys {
		if k.Hidden >= 0 {
			hidden++
		}
	}
	n := len(full.Columns) - hidden
	if n < 0 {
		return nil, fmt.Errorf("difftest: reference has %d columns, fewer than its %d sort keys", len(full.Columns), hidden)
	}
	for _, k := range keys {
		if k.Col >= n {
			return nil, fmt.Errorf("difftest: sort key column %d out of range", k.Col+1)
		}
	}
	return &Reference{Shape: shape, Full: full, NumOutput: n, Keys: keys}, nil
}

// Expected returns the rows a correct engine returns when ties are broken
// the way DuckDB broke them: the window [Offset, Offset+Limit) of Full's
// output columns.
func (r *Reference) Expected() [][]any {
	lo, hi := r.window()
	out := make([][]any, 0, hi-lo)
	for _, row := range r.Full.Rows[lo:hi] {
		out = append(out, row[:r.NumOutput])
	}
	return out
}

func (r *Reference) window() (lo, hi int) {
	n := len(r.Full.Rows)
	lo = int(min(r.Shape.Offset, int64(n)))
	hi = n
	if r.Shape.Limit >= 0 && int64(lo)+r.Shape.Limit < int64(n) {
		hi = lo + int(r.Shape.Limit)
	}
	return lo, hi
}

func (r *Reference) sortKey(row []any) string {
	var b strings.Builder
	for _, k := range r.Keys {
		i := k.Col
		if i < 0 {
			i = r.NumOutput + k.Hidden
		}
		b.WriteString(exactKey(row[i]))
		b.WriteByte(0)
	}
	return b.String()
}

// Mismatch describes how our result differs from the reference.
type Mismatch struct {
	Reason string
	// Row is the index of the first of our rows that could not be matched
	// (-1 when the difference is not about a single row).
	Row        int
	Ours, Want [][]any // a few rows around the difference, for the report
}

func (m *Mismatch) Error() string {
	var b strings.Builder
	b.WriteString(m.Reason)
	if len(m.Ours) > 0 || len(m.Want) > 0 {
		b.WriteString("\n  ours:")
		writeRows(&b, m.Ours)
		b.WriteString("\n  duckdb:")
		writeRows(&b, m.Want)
	}
	return b.String()
}

func writeRows(b *strings.Builder, rows [][]any) {
	if len(rows) == 0 {
		b.WriteString(" (none)")
	}
	for _, r := range rows {
		b.WriteString("\n    ")
		b.WriteString(FormatRow(r))
	}
}

// Compare checks our result against the reference and returns nil when it
// is a correct answer to the query:
//   - it has the same number of columns and rows as the reference window;
//   - without ORDER BY, its rows are a sub-multiset of the full result (the
//     whole multiset when there is no LIMIT/OFFSET);
//   - with ORDER BY, row j equals some not yet used reference row whose sort
//     keys equal those of the reference row at position Offset+j, so any
//     order of ties, and any choice of tied rows at the LIMIT cut, passes.
//
// Values compare with ValueEqual: integers exactly across widths, floats
// within FloatTolerance.
func Compare(ours *Table, ref *Reference) *Mismatch {
	want := ref.Expected()
	if len(ours.Columns) != ref.NumOutput {
		return &Mismatch{Reason: fmt.Sprintf("%d columns %v, want %d %v", len(ours.Columns), ours.Columns,
			ref.NumOutput, ref.Full.Columns[:ref.NumOutput]), Row: -1, Ours: head(ours.Rows), Want: head(want)}
	}
	if len(ours.Rows) != len(want) {
		return &Mismatch{Reason: fmt.Sprintf("%d rows, want %d", len(ours.Rows), len(want)), Row: -1,
			Ours: head(ours.Rows), Want: head(want)}
	}
	// Columns that hold floats on either side are left out of the bucket
	// key and compared with tolerance inside a bucket.
	exact := make([]bool, ref.NumOutput)
	for i := range exact {
		exact[i] = ours.Kinds[i] != KindFloat && ref.Full.Kinds[i] != KindFloat
	}
	bucketKey := func(row []any) string {
		var b strings.Builder
		for i, ok := range exact {
			if ok {
				b.WriteString(exactKey(row[i]))
			}
			b.WriteByte(0)
		}
		return b.String()
	}

	// fullKey includes the floats: most rows match a reference row exactly,
	// which an index finds at once; the tolerant scan of a bucket is the
	// fallback (a bucket of all-float rows would otherwise cost O(n²)).
	fullKey := func(row []any) string {
		var b strings.Builder
		for i := range exact {
			b.WriteString(exactKey(row[i]))
			b.WriteByte(0)
		}
		return b.String()
	}

	// Group the reference rows by sort key (one group without ORDER BY);
	// within a group, index unused rows by bucket key and by full key.
	lo, hi := ref.window()
	type group struct {
		start, end int
		buckets    map[string][]int // built on first use
		exactRows  map[string][]int
	}
	used := make([]bool, len(ref.Full.Rows))
	var groups []*group
	groupOf := make([]*group, len(ref.Full.Rows))
	if len(ref.Keys) == 0 {
		g := &group{start: 0, end: len(ref.Full.Rows)}
		groups = append(groups, g)
		for i := range groupOf {
			groupOf[i] = g
		}
	} else {
		// Only groups that overlap the window matter.
		for i := lo; i < hi; {
			k := ref.sortKey(ref.Full.Rows[i])
			s := i
			for s > 0 && ref.sortKey(ref.Full.Rows[s-1]) == k {
				s--
			}
			e := i + 1
			for e < len(ref.Full.Rows) && ref.sortKey(ref.Full.Rows[e]) == k {
				e++
			}
			g := &group{start: s, end: e}
			groups = append(groups, g)
			for j := s; j < e; j++ {
				groupOf[j] = g
			}
			i = e
		}
	}
	// take returns and marks the first unused row of list equal to row,
	// dropping used rows from the list's front as it goes.
	take := func(m map[string][]int, k string, row []any) int {
		list := m[k]
		for len(list) > 0 && used[list[0]] {
			list = list[1:]
		}
		m[k] = list
		for _, i := range list {
			if !used[i] && rowEqual(row, ref.Full.Rows[i][:ref.NumOutput]) {
				used[i] = true
				return i
			}
		}
		return -1
	}
	for j, row := range ours.Rows {
		g := groupOf[lo+j]
		if g.buckets == nil {
			g.buckets = make(map[string][]int)
			g.exactRows = make(map[string][]int)
			for i := g.start; i < g.end; i++ {
				r := ref.Full.Rows[i]
				g.buckets[bucketKey(r)] = append(g.buckets[bucketKey(r)], i)
				g.exactRows[fullKey(r)] = append(g.exactRows[fullKey(r)], i)
			}
		}
		found := take(g.exactRows, fullKey(row), row)
		if found < 0 {
			found = take(g.buckets, bucketKey(row), row)
		}
		if found < 0 {
			reason := fmt.Sprintf("row %d %s is not in the reference", j+1, FormatRow(row))
			if len(ref.Keys) > 0 {
				reason = fmt.Sprintf("row %d %s: no unused reference row with the sort keys of reference row %d",
					j+1, FormatRow(row), lo+j+1)
			}
			from := max(0, j-2)
			return &Mismatch{Reason: reason, Row: j, Ours: ours.Rows[from:min(len(ours.Rows), j+3)],
				Want: want[from:min(len(want), j+3)]}
		}
	}
	return nil
}

func rowEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !ValueEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func head(rows [][]any) [][]any { return rows[:min(len(rows), 5)] }

// TypeNotes lists columns whose kind differs between ours and the reference
// (e.g. an integer where DuckDB returns a DOUBLE). Values may still compare
// equal; the notes go into the results table.
func TypeNotes(ours *Table, ref *Reference) []string {
	var notes []string
	for i := 0; i < min(len(ours.Kinds), ref.NumOutput); i++ {
		if ours.Kinds[i] != ref.Full.Kinds[i] {
			notes = append(notes, fmt.Sprintf("column %d: ours %s, DuckDB %s", i+1, ours.Types[i], ref.Full.Types[i]))
		}
	}
	return notes
}
