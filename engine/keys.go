package engine

import (
	"strings"

	"cachebook/engine/expr"
	"cachebook/engine/sql"
)

// idents returns the column references of e.
func idents(e sql.Expr) []*sql.Ident {
	var ids []*sql.Ident
	sql.Walk(e, func(x sql.Expr) bool {
		if id, ok := x.(*sql.Ident); ok {
			ids = append(ids, id)
		}
		return true
	})
	return ids
}

// keyDrop says which GROUP BY keys are hashed. A key is not hashed when it
// cannot split a group the other keys form:
//
//   - a constant key (no column reference) has one value;
//   - a key whose every column reference is a column that is itself a key
//     (GROUP BY ClientIP, ClientIP - 1) is a function of that key;
//   - a key equal to an earlier key repeats it.
//
// The dropped keys are left out of q.keys and q.keyExprsAST: the
// post-aggregation binder then binds a select item, HAVING or ORDER BY
// expression that names one over the keys it is computed from (or as the
// constant), row by row over the groups rather than the input. When every
// key is constant the first is still hashed, so that an empty input gives
// no group, as a GROUP BY does, rather than the one row of an ungrouped
// aggregate.
//
// Every function the engine has gives the same value for the same
// arguments; a volatile one (random()) would have to be hashed.
//
// A column key of a floating-point type determines no other key: 0 and -0
// (or NaNs of different bits) fall into one group, yet an expression may
// tell them apart.
type keyDrop struct {
	keep  []bool
	notes []string // EXPLAIN lines about the keys not hashed
	names []string // EXPLAIN names of the kept keys
}

// dropKeys decides, for the GROUP BY keys asts bound as bound, which are
// hashed.
func dropKeys(asts []sql.Expr, bound []expr.Expr) keyDrop {
	n := len(asts)
	d := keyDrop{keep: make([]bool, n)}
	// base[i]: key i is a plain column reference, the first of its column.
	base := make([]bool, n)
	for i, k := range asts {
		d.keep[i] = true
		id, ok := k.(*sql.Ident)
		if !ok {
			continue
		}
		dup := false
		for j := 0; j < i; j++ {
			if base[j] && sql.Equal(asts[j], id) {
				dup = true
				break
			}
		}
		base[i] = !dup
	}
	baseOf := func(id *sql.Ident) int {
		for j := range asts {
			if base[j] && sql.Equal(asts[j], id) {
				return j
			}
		}
		return -1
	}
	derivedFrom := make([][]string, n) // per base key: the keys computed from it alone
	var constants, multi, dups []string
	for i, k := range asts {
		if base[i] {
			continue
		}
		if _, ok := k.(*sql.Ident); ok {
			// A repeated column.
			d.keep[i] = false
			dups = append(dups, sql.Format(k))
			continue
		}
		ids := idents(k)
		if len(ids) == 0 {
			d.keep[i] = false
			constants = append(constants, sql.Format(k))
			continue
		}
		from := -1
		ok := true
		for _, id := range ids {
			j := baseOf(id)
			if j < 0 || bound[j].Type().IsFloat() {
				ok = false
				break
			}
			if from == -1 {
				from = j
			} else if from != j {
				from = -2
			}
		}
		if !ok {
			continue
		}
		d.keep[i] = false
		if from >= 0 {
			derivedFrom[from] = append(derivedFrom[from], sql.Format(k))
		} else {
			multi = append(multi, sql.Format(k))
		}
	}
	// A later key repeating a kept expression.
	for i := range asts {
		if !d.keep[i] || base[i] {
			continue
		}
		for j := 0; j < i; j++ {
			if d.keep[j] && sql.Equal(asts[j], asts[i]) {
				d.keep[i] = false
				dups = append(dups, sql.Format(asts[i]))
				break
			}
		}
	}
	kept := 0
	for _, k := range d.keep {
		if k {
			kept++
		}
	}
	if kept == 0 && n > 0 {
		// Every key is constant: hash the first.
		d.keep[0] = true
		constants = constants[1:]
	}
	for i, k := range asts {
		if !d.keep[i] {
			continue
		}
		name := sql.Format(k)
		if f := derivedFrom[i]; len(f) > 0 {
			name += " (" + strings.Join(f, ", ") + " computed from it)"
		}
		d.names = append(d.names, name)
	}
	if len(multi) > 0 {
		d.notes = append(d.notes, "keys computed from the keys after grouping, not hashed: "+strings.Join(multi, ", "))
	}
	if len(constants) > 0 {
		d.notes = append(d.notes, "constant keys, not hashed: "+strings.Join(constants, ", "))
	}
	if len(dups) > 0 {
		d.notes = append(d.notes, "repeated keys, not hashed: "+strings.Join(dups, ", "))
	}
	return d
}
