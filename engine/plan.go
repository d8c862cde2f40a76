package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// relation is the input of a SELECT: a table, a file, a subquery, or the one
// empty row of a SELECT without FROM.
type relation struct {
	name string
	cols []vec.Column
	rows int64    // -1 when unknown before running
	op   operator // the operator producing its rows
	scan *scanOp  // the table scan, when op is one: WHERE is pushed into it
}

// query is a planned SELECT: the bound clauses and the operator tree built
// from them.
type query struct {
	sel   *sql.Select
	rel   *relation
	where expr.Expr
	// proven are the WHERE conjuncts the row groups' statistics prove
	// true for every row: where leaves them out.
	proven  []string
	grouped bool

	keyExprsAST []sql.Expr
	keys        []expr.Expr
	keyNames    []string
	keyNotes    []string // EXPLAIN lines on the GROUP BY keys not hashed
	aggCalls    []*sql.Call
	specs       []agg.Spec
	args        []expr.Expr // per spec; nil for count(*)
	aggNames    []string
	having      expr.Expr

	out      []expr.Expr // select items, then hidden ORDER BY keys
	cols     []vec.Column
	nVisible int
	// top: the statement's own query, not a subquery (which may be read
	// a few rows at a time).
	top    bool
	order  []orderKey
	limit  int64 // -1: none
	offset int64

	need []bool // relation columns the query reads
	// distinctGroups, if positive, is the most groups its aggregation,
	// grouped DISTINCT aggregates run in one step, is to run for
	// (hashAggOp.distinctGroups).
	distinctGroups int64
	// distinct is set for SELECT DISTINCT over an aggregation (GROUP BY,
	// aggregates or HAVING): the distinct rows are found after the
	// projection, by a step of their own.
	distinct  bool
	rewritten int // sums rewritten by sum_rewrite

	// aliases maps a SELECT alias (lower case) to its item's expression,
	// for aliases used inside WHERE, HAVING and ORDER BY expressions.
	aliases map[string]sql.Expr

	root operator
}

func posErr(p sql.Pos, format string, args ...any) error {
	return &sql.Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// planSelect binds sel against its FROM relation.
func (s *Session) planSelect(ctx context.Context, sel *sql.Select, depth int) (*query, error) {
	if depth > 16 {
		return nil, posErr(sel.Pos(), "subqueries nested too deeply")
	}
	rel, err := s.relation(ctx, sel.From, depth)
	if err != nil {
		return nil, err
	}
	q := &query{sel: sel, rel: rel, limit: -1, need: make([]bool, len(rel.cols))}
	if err := unqualify(sel); err != nil {
		return nil, err
	}

	// Expand the select list.
	var items []sql.Expr
	var names []string
	for _, it := range sel.Items {
		if it.Star {
			if len(rel.cols) == 0 {
				return nil, posErr(it.Pos, "SELECT * needs a FROM clause")
			}
			for _, c := range rel.cols {
				items = append(items, &sql.Ident{Name: c.Name, At: it.Pos})
				names = append(names, c.Name)
			}
			continue
		}
		e := it.Expr
		if s.settings.SumRewrite {
			var n int
			e, n = rewriteSums(e, rel.cols)
			q.rewritten += n
		}
		items = append(items, e)
		switch {
		case it.Alias != "":
			names = append(names, it.Alias)
		case isIdent(it.Expr):
			names = append(names, it.Expr.(*sql.Ident).Name)
		default:
			names = append(names, sql.Format(it.Expr))
		}
	}

	q.aliases = map[string]sql.Expr{}
	for j, it := range sel.Items {
		if it.Alias != "" && !it.Star {
			if _, dup := q.aliases[strings.ToLower(it.Alias)]; !dup {
				q.aliases[strings.ToLower(it.Alias)] = items[q.itemIndex(sel, j)]
			}
		}
	}
	relBinder := &expr.Binder{Columns: rel.cols}
	if sel.Where != nil {
		if sql.HasAggregate(sel.Where) {
			return nil, posErr(sel.Where.Pos(), "aggregate functions are not allowed in WHERE")
		}
		wb := &expr.Binder{Columns: rel.cols, Subst: q.aliasSubst(false)}
		w, err := wb.BindPredicate(sel.Where, "WHERE")
		if err != nil {
			return nil, err
		}
		q.where = w
		if keep, proven := s.alwaysTrue(rel, sel.Where); len(proven) > 0 {
			q.where = nil
			if keep != nil {
				if q.where, err = wb.BindPredicate(keep, "WHERE"); err != nil {
					return nil, err
				}
			}
			q.proven = proven
		}
	}

	aggregated := len(sel.GroupBy) > 0 || sel.Having != nil
	for _, e := range items {
		aggregated = aggregated || sql.HasAggregate(e)
	}
	for _, o := range sel.OrderBy {
		aggregated = aggregated || sql.HasAggregate(o.Expr)
	}
	// SELECT DISTINCT without aggregation groups by the select items;
	// over an aggregation it is a step after the projection.
	grouped := aggregated || sel.Distinct
	q.distinct = sel.Distinct && aggregated
	q.grouped = grouped

	// ORDER BY items that name a select item (ordinal or alias) refer to it.
	orderItem := make([]int, len(sel.OrderBy))
	for i, o := range sel.OrderBy {
		orderItem[i] = -1
		if lit, ok := o.Expr.(*sql.Literal); ok && lit.Kind == sql.LitInt {
			if lit.Int < 1 || lit.Int > int64(len(items)) {
				return nil, posErr(lit.Pos(), "ORDER BY position %d is not in the select list (1 to %d)", lit.Int, len(items))
			}
			orderItem[i] = int(lit.Int - 1)
			continue
		}
		if sel.Distinct {
			// SELECT DISTINCT a … ORDER BY a: the key is the select item.
			for j, it := range items {
				if sql.Equal(it, o.Expr) {
					orderItem[i] = j
					break
				}
			}
			if orderItem[i] >= 0 {
				continue
			}
		}
		if id, ok := o.Expr.(*sql.Ident); ok && id.Table == "" {
			for j, it := range sel.Items {
				if it.Alias != "" && strings.EqualFold(it.Alias, id.Name) {
					orderItem[i] = j
					break
				}
			}
		}
	}

	var post *expr.Binder
	if grouped {
		if err := q.planAggregation(items, sel, relBinder, s.settings.SumRewrite); err != nil {
			return nil, err
		}
		post = q.postBinder()
	} else {
		post = &expr.Binder{Columns: rel.cols}
	}

	for i, e := range items {
		b, err := post.Bind(e)
		if err != nil {
			return nil, q.explainBindError(err)
		}
		q.out = append(q.out, b)
		q.cols = append(q.cols, vec.Column{Name: names[i], Type: b.Type()})
	}
	q.nVisible = len(q.out)
	if grouped && sel.Having != nil {
		h := sel.Having
		if s.settings.SumRewrite {
			h, _ = rewriteSums(h, q.rel.cols)
		}
		hb := *post
		hb.Subst = q.aliasSubst(true)
		b, err := hb.BindPredicate(h, "HAVING")
		if err != nil {
			return nil, q.explainBindError(err)
		}
		q.having = b
	}
	for i, o := range sel.OrderBy {
		k := orderKey{col: orderItem[i], desc: o.Desc, nullsFirst: s.settings.NullsFirst(o.Desc)}
		if o.NullsFirst != nil {
			k.nullsFirst = *o.NullsFirst
		}
		if k.col < 0 && sel.Distinct {
			return nil, posErr(o.Expr.Pos(), "ORDER BY %s, which is not in the SELECT DISTINCT list, is not supported", sql.Format(o.Expr))
		}
		if k.col < 0 {
			e := o.Expr
			if s.settings.SumRewrite {
				e, _ = rewriteSums(e, q.rel.cols)
			}
			ob := *post
			ob.Subst = q.aliasSubst(true)
			b, err := ob.Bind(e)
			if err != nil {
				return nil, q.explainBindError(err)
			}
			k.col = len(q.out)
			q.out = append(q.out, b)
			q.cols = append(q.cols, vec.Column{Name: sql.Format(o.Expr), Type: b.Type()})
		}
		q.order = append(q.order, k)
	}
	if q.limit, err = constInt(sel.Limit, "LIMIT"); err != nil {
		return nil, err
	}
	if q.offset, err = constInt(sel.Offset, "OFFSET"); err != nil {
		return nil, err
	}
	if q.offset < 0 {
		q.offset = 0
	}

	// The relation columns the query reads.
	mark := func(e expr.Expr) {
		if e == nil {
			return
		}
		for _, c := range expr.Columns(e) {
			q.need[c] = true
		}
	}
	mark(q.where)
	q.eachAbove(mark)
	q.top = depth == 0
	q.root = s.build(q)
	return q, nil
}

// eachAbove calls f with each expression the operators above the scan
// evaluate: the GROUP BY keys and aggregate arguments of a grouped query,
// the outputs of any other.
func (q *query) eachAbove(f func(expr.Expr)) {
	if q.grouped {
		for _, k := range q.keys {
			f(k)
		}
		for _, a := range q.args {
			f(a)
		}
		return
	}
	for _, e := range q.out {
		f(e)
	}
}

// itemIndex maps select item j of sel to its index in the expanded item
// list (a * expands to several items).
func (q *query) itemIndex(sel *sql.Select, j int) int {
	n := 0
	for i := 0; i < j; i++ {
		if sel.Items[i].Star {
			n += len(q.rel.cols)
		} else {
			n++
		}
	}
	return n
}

// aliasSubst returns the substitution of SELECT aliases inside
// expressions, as DuckDB allows: a name that is not a column of the FROM
// relation but is the alias of a select item stands for that item's
// expression. In WHERE (aggregates false) an aliased aggregate is not
// substituted.
func (q *query) aliasSubst(aggregates bool) func(sql.Expr) (sql.Expr, bool) {
	return func(e sql.Expr) (sql.Expr, bool) {
		id, ok := e.(*sql.Ident)
		if !ok || id.Table != "" || hasColumn(q.rel.cols, id.Name) {
			return nil, false
		}
		r, ok := q.aliases[strings.ToLower(id.Name)]
		if !ok || (!aggregates && sql.HasAggregate(r)) {
			return nil, false
		}
		if rid, self := r.(*sql.Ident); self && strings.EqualFold(rid.Name, id.Name) {
			return nil, false
		}
		return r, true
	}
}

// constInt evaluates a LIMIT or OFFSET clause, which must be a non-negative
// integer constant; nil gives -1.
func constInt(e sql.Expr, clause string) (int64, error) {
	if e == nil {
		return -1, nil
	}
	lit, ok := e.(*sql.Literal)
	if !ok || lit.Kind != sql.LitInt || lit.Int < 0 {
		return 0, posErr(e.Pos(), "%s needs a non-negative integer constant, found %s", clause, sql.Format(e))
	}
	return lit.Int, nil
}

func isIdent(e sql.Expr) bool { _, ok := e.(*sql.Ident); return ok }

// planAggregation resolves the GROUP BY keys and collects the aggregates of
// the select list, HAVING and ORDER BY.
func (q *query) planAggregation(items []sql.Expr, sel *sql.Select, relBinder *expr.Binder, rewrite bool) error {
	var keys []sql.Expr
	if sel.Distinct && !q.distinct {
		keys = append(keys, items...)
	}
	for _, g := range sel.GroupBy {
		switch e := g.(type) {
		case *sql.Literal:
			if e.Kind == sql.LitInt {
				if e.Int < 1 || e.Int > int64(len(items)) {
					return posErr(e.Pos(), "GROUP BY position %d is not in the select list (1 to %d)", e.Int, len(items))
				}
				g = items[e.Int-1]
			}
		case *sql.Ident:
			if e.Table == "" && !hasColumn(q.rel.cols, e.Name) {
				for j, it := range sel.Items {
					if it.Alias != "" && strings.EqualFold(it.Alias, e.Name) {
						g = items[j]
						break
					}
				}
			}
		}
		if sql.HasAggregate(g) {
			return posErr(g.Pos(), "aggregate functions are not allowed in GROUP BY")
		}
		keys = append(keys, g)
	}
	bound := make([]expr.Expr, len(keys))
	for i, k := range keys {
		b, err := relBinder.Bind(k)
		if err != nil {
			return err
		}
		bound[i] = b
	}
	d := dropKeys(keys, bound)
	for i, k := range keys {
		if d.keep[i] {
			q.keyExprsAST = append(q.keyExprsAST, k)
			q.keys = append(q.keys, bound[i])
		}
	}
	q.keyNames = d.names
	q.keyNotes = d.notes

	collect := func(e sql.Expr) error {
		if rewrite {
			e, _ = rewriteSums(e, q.rel.cols)
		}
		var err error
		sql.Walk(e, func(x sql.Expr) bool {
			c, ok := x.(*sql.Call)
			if !ok || !sql.IsAggregate(c.Name) || err != nil {
				return err == nil
			}
			for _, seen := range q.aggCalls {
				if sql.Equal(seen, c) {
					return false
				}
			}
			err = q.addAggregate(c, relBinder)
			return false
		})
		return err
	}
	for _, e := range items {
		if err := collect(e); err != nil {
			return err
		}
	}
	if sel.Having != nil {
		if err := collect(sel.Having); err != nil {
			return err
		}
	}
	for _, o := range sel.OrderBy {
		if err := collect(o.Expr); err != nil {
			return err
		}
	}
	return nil
}

func hasColumn(cols []vec.Column, name string) bool {
	for _, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

func (q *query) addAggregate(c *sql.Call, relBinder *expr.Binder) error {
	name := c.Name
	if name == "mean" {
		name = "avg"
	}
	var spec agg.Spec
	var arg expr.Expr
	// count() is count(*), as in DuckDB.
	if c.Star || name == "count" && len(c.Args) == 0 {
		if name != "count" {
			return posErr(c.Pos(), "%s(*) is not supported; only count(*)", c.Name)
		}
		spec.Kind = agg.CountStar
	} else {
		if len(c.Args) != 1 {
			return posErr(c.Pos(), "%s with %d arguments is not supported", c.Name, len(c.Args))
		}
		if sql.HasAggregate(c.Args[0]) {
			return posErr(c.Args[0].Pos(), "aggregate function calls cannot be nested")
		}
		b, err := relBinder.Bind(c.Args[0])
		if err != nil {
			return err
		}
		arg = b
		spec.In = b.Type()
		switch name {
		case "count":
			spec.Kind = agg.Count
			if c.Distinct {
				spec.Kind = agg.CountDistinct
			}
		case "sum", "avg":
			if !b.Type().IsNumeric() && b.Type() != vec.Null {
				return posErr(c.Args[0].Pos(), "%s of %s is not supported: it needs a numeric argument", c.Name, b.Type())
			}
			spec.Kind = agg.Sum
			if name == "avg" {
				spec.Kind = agg.Avg
			}
			if spec.In == vec.Null {
				spec.In = vec.Int64
			}
		case "min", "any_value", "first":
			spec.Kind = agg.Min
		case "max":
			spec.Kind = agg.Max
		default:
			return posErr(c.Pos(), "aggregate function %s is not supported", c.Name)
		}
		spec.Distinct = c.Distinct && (spec.Kind == agg.Sum || spec.Kind == agg.Avg)
	}
	q.aggCalls = append(q.aggCalls, c)
	q.specs = append(q.specs, spec)
	q.args = append(q.args, arg)
	q.aggNames = append(q.aggNames, sql.Format(c))
	return nil
}

// postBinder binds expressions over the aggregation's output: the key
// columns, then one column per aggregate.
func (q *query) postBinder() *expr.Binder {
	var cols []vec.Column
	for i, k := range q.keys {
		cols = append(cols, vec.Column{Name: "#key" + strconv.Itoa(i), Type: k.Type()})
	}
	for i, sp := range q.specs {
		cols = append(cols, vec.Column{Name: "#agg" + strconv.Itoa(i), Type: sp.OutType()})
	}
	nk := len(q.keys)
	return &expr.Binder{Columns: cols, Replace: func(e sql.Expr) (int, bool) {
		if c, ok := e.(*sql.Call); ok && sql.IsAggregate(c.Name) {
			for j, seen := range q.aggCalls {
				if sql.Equal(seen, c) {
					return nk + j, true
				}
			}
		}
		for i, k := range q.keyExprsAST {
			if sql.Equal(k, e) {
				return i, true
			}
		}
		return 0, false
	}}
}

// explainBindError turns an unknown column after aggregation into the
// message users know from other databases.
func (q *query) explainBindError(err error) error {
	var se *sql.Error
	var unknown *expr.UnknownColumnError
	if !q.grouped || !errors.As(err, &se) || !errors.As(err, &unknown) {
		return err
	}
	if hasColumn(q.rel.cols, unknown.Name) {
		return posErr(se.Pos, "column %q must appear in the GROUP BY clause or be used in an aggregate function", unknown.Name)
	}
	return err
}

// rewriteSums replaces sum(x + c), sum(c + x) and sum(x - c), with c a
// numeric constant, by sum(x) + c * count(x): ClickBench Q29's ninety sums
// then share one sum and one count. It returns the new expression and the
// number of sums rewritten. A FLOAT x (over the columns cols) is left
// alone: x + c rounds each row to single precision, which the rewritten
// sum would not.
func rewriteSums(e sql.Expr, cols []vec.Column) (sql.Expr, int) {
	n := 0
	var rw func(sql.Expr) sql.Expr
	rw = func(e sql.Expr) sql.Expr {
		switch x := e.(type) {
		case *sql.Call:
			if x.Name == "sum" && !x.Distinct && len(x.Args) == 1 {
				if b, ok := x.Args[0].(*sql.Binary); ok && (b.Op == sql.OpAdd || b.Op == sql.OpSub) {
					col, c := b.X, b.Y
					if isNumLit(b.X) && b.Op == sql.OpAdd {
						col, c = b.Y, b.X
					}
					if isNumLit(c) && !isNumLit(col) && !isFloat32(col, cols) {
						n++
						at := x.At
						sum := &sql.Call{Name: "sum", Args: []sql.Expr{col}, At: at}
						cnt := &sql.Call{Name: "count", Args: []sql.Expr{col}, At: at}
						op := sql.OpAdd
						if b.Op == sql.OpSub {
							op = sql.OpSub
						}
						return &sql.Binary{Op: op, X: sum, Y: &sql.Binary{Op: sql.OpMul, X: c, Y: cnt, At: at}, At: at}
					}
				}
			}
			return x
		case *sql.Binary:
			return &sql.Binary{Op: x.Op, X: rw(x.X), Y: rw(x.Y), At: x.At, OpPos: x.OpPos}
		case *sql.Unary:
			return &sql.Unary{Op: x.Op, X: rw(x.X), At: x.At}
		}
		return e
	}
	return rw(e), n
}

// isFloat32 reports whether e, bound over cols, is FLOAT (or fails to
// bind, when it is best left alone too).
func isFloat32(e sql.Expr, cols []vec.Column) bool {
	b, err := (&expr.Binder{Columns: cols}).Bind(e)
	return err != nil || b.Type() == vec.Float32
}

func isNumLit(e sql.Expr) bool {
	l, ok := e.(*sql.Literal)
	return ok && (l.Kind == sql.LitInt || l.Kind == sql.LitFloat)
}

// qualifiers returns the names a column of the FROM relation ref may be
// qualified with: the alias, else the table's name (a file's name without
// .parquet, a file path's last element too).
func qualifiers(ref sql.TableRef) []string {
	switch r := ref.(type) {
	case *sql.TableName:
		if r.Alias != "" {
			return []string{r.Alias}
		}
		return []string{r.Name}
	case *sql.FileRef:
		if r.Alias != "" {
			return []string{r.Alias}
		}
		base := r.Path[strings.LastIndexAny(r.Path, `/\`)+1:]
		return []string{r.Path, base, strings.TrimSuffix(base, ".parquet")}
	case *sql.Subquery:
		if r.Alias != "" {
			return []string{r.Alias}
		}
	}
	return nil
}

// unqualify resolves the qualified column names of sel (t.a, t.*) against
// its one FROM relation: a qualifier that names the relation is dropped, so
// that test.a is the column a in every clause (GROUP BY a then covers
// SELECT test.a); any other qualifier is an error. It edits sel's syntax
// tree in place.
func unqualify(sel *sql.Select) error {
	names := qualifiers(sel.From)
	check := func(table string, p sql.Pos) error {
		for _, n := range names {
			if strings.EqualFold(n, table) {
				return nil
			}
		}
		if len(names) == 0 {
			return posErr(p, "table %q is not in the FROM clause", table)
		}
		return posErr(p, "table %q is not in the FROM clause (it names %q)", table, names[0])
	}
	for i, it := range sel.Items {
		if it.Star && it.StarTable != "" {
			if err := check(it.StarTable, it.Pos); err != nil {
				return err
			}
			sel.Items[i].StarTable = ""
		}
	}
	var err error
	fix := func(e sql.Expr) {
		sql.Walk(e, func(x sql.Expr) bool {
			if id, ok := x.(*sql.Ident); ok && id.Table != "" && err == nil {
				if err = check(id.Table, id.At); err == nil {
					id.Table = ""
				}
			}
			return err == nil
		})
	}
	for _, it := range sel.Items {
		fix(it.Expr)
	}
	fix(sel.Where)
	for _, g := range sel.GroupBy {
		fix(g)
	}
	fix(sel.Having)
	for _, o := range sel.OrderBy {
		fix(o.Expr)
	}
	return err
}
