package difftest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// ColKind is the kind of value a column or generated expression holds.
type ColKind uint8

// The kinds the query generator knows.
const (
	CInt ColKind = iota
	CFloat
	CString
	CDate
	CTime
	CBool
)

// GenColumn is a column the generator may reference.
type GenColumn struct {
	Name string
	Kind ColKind
	// Big marks columns whose values are near their type's limits, which
	// the generator keeps out of arithmetic, SUM and casts to BIGINT:
	// DuckDB types integer arithmetic in the operands' own width and sums
	// into HUGEINT, where our engine widens to BIGINT (known differences,
	// see testdata/known_failures.txt). FLOAT is single precision in both
	// engines (FLOAT with FLOAT, integers or decimal literals is FLOAT, with
	// DOUBLE it is DOUBLE), so t.f4, a FLOAT column, takes part in
	// arithmetic; types.f32 holds NaN and 3.4e38 (f32 * 3 is inf, a fixed
	// query in TestIssueQueries) and stays Big, as do the DECIMAL columns,
	// which our engine reads as DOUBLE (dec * f4 is DOUBLE here, FLOAT in
	// DuckDB).
	Big bool
}

// GenTable is a table the generator queries, with its columns.
type GenTable struct {
	Name    string
	Columns []GenColumn
}

// GenTables are the tables of RandomTables and a generated hits table.
var GenTables = []GenTable{
	{"t", []GenColumn{{"id", CInt, false}, {"g", CInt, false}, {"g2", CInt, false}, {"v", CInt, false},
		{"f", CFloat, false}, {"d", CDate, false}, {"ts", CTime, false}, {"small", CInt, false}, {"s", CString, false},
		{"s2", CString, false}, {"n", CInt, false}, {"b", CBool, false}, {"f4", CFloat, false}}},
	{"types", []GenColumn{{"i8", CInt, false}, {"i16", CInt, true}, {"i32", CInt, true}, {"i64", CInt, true},
		{"u8", CInt, true}, {"u16", CInt, true}, {"u32", CInt, true}, {"u64", CInt, true}, {"f32", CFloat, true},
		{"f64", CFloat, false}, {"b", CBool, false}, {"d", CDate, false}, {"ts_s", CTime, false}, {"ts_ms", CTime, false},
		{"ts", CTime, false}, {"ts_ns", CTime, false}, {"s", CString, false}, {"bl", CString, false},
		{"dec", CFloat, true}, {"dec18", CFloat, true}, {"dec30", CFloat, true}}},
	{"hits", []GenColumn{{"CounterID", CInt, false}, {"RegionID", CInt, false}, {"UserID", CInt, true}, {"IsRefresh", CInt, false},
		{"ResolutionWidth", CInt, false}, {"MobilePhone", CInt, false}, {"TraficSourceID", CInt, false},
		{"AdvEngineID", CInt, false}, {"DontCountHits", CInt, false}, {"SearchEngineID", CInt, false},
		{"WindowClientWidth", CInt, false}, {"SearchPhrase", CString, false}, {"MobilePhoneModel", CString, false},
		{"EventDate", CDate, false}}},
}

// Query is a generated SELECT, kept in parts so that a failing one can be
// minimised clause by clause.
type Query struct {
	Distinct bool
	Keys     []string // grouping keys, also the first output columns
	Aggs     []string // aggregates (or plain expressions when Keys and GROUP BY are empty and Plain is set)
	Plain    bool     // no aggregation: Aggs are row expressions
	From     string
	Where    string
	Having   string
	OrderBy  []string // ordinals with direction, e.g. "2 DESC"
	Limit    int      // -1: none
	Offset   int
}

// SQL renders the query.
func (q *Query) SQL() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	if q.Distinct {
		b.WriteString("DISTINCT ")
	}
	items := append(append([]string(nil), q.Keys...), q.Aggs...)
	b.WriteString(strings.Join(items, ", "))
	b.WriteString(" FROM " + q.From)
	if q.Where != "" {
		b.WriteString(" WHERE " + q.Where)
	}
	if len(q.Keys) > 0 && !q.Plain && !q.Distinct {
		b.WriteString(" GROUP BY " + strings.Join(q.Keys, ", "))
	}
	if q.Having != "" {
		b.WriteString(" HAVING " + q.Having)
	}
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY " + strings.Join(q.OrderBy, ", "))
	}
	if q.Limit >= 0 {
		fmt.Fprintf(&b, " LIMIT %d", q.Limit)
		if q.Offset > 0 {
			fmt.Fprintf(&b, " OFFSET %d", q.Offset)
		}
	}
	return b.String()
}

func (q *Query) clone() *Query {
	c := *q
	c.Keys = append([]string(nil), q.Keys...)
	c.Aggs = append([]string(nil), q.Aggs...)
	c.OrderBy = append([]string(nil), q.OrderBy...)
	return &c
}

func (q *Query) width() int { return len(q.Keys) + len(q.Aggs) }

// Reductions returns the queries one step simpler than q, for minimising
// a failing query: without a clause, a key, an aggregate or an ORDER BY key.
func (q *Query) Reductions() []*Query {
	var out []*Query
	add := func(f func(c *Query) bool) {
		c := q.clone()
		if f(c) && c.width() > 0 {
			// Ordinals beyond the select list are dropped.
			var ob []string
			for _, o := range c.OrderBy {
				var i int
				if _, err := fmt.Sscanf(o, "%d", &i); err == nil && i <= c.width() {
					ob = append(ob, o)
				}
			}
			c.OrderBy = ob
			out = append(out, c)
		}
	}
	add(func(c *Query) bool { ok := c.Where != ""; c.Where = ""; return ok })
	add(func(c *Query) bool { ok := c.Having != ""; c.Having = ""; return ok })
	add(func(c *Query) bool { ok := c.Limit >= 0; c.Limit, c.Offset = -1, 0; return ok })
	add(func(c *Query) bool { ok := c.Offset > 0; c.Offset = 0; return ok })
	add(func(c *Query) bool { ok := len(c.OrderBy) > 0 && c.Limit < 0; c.OrderBy = nil; return ok })
	add(func(c *Query) bool { ok := c.Distinct; c.Distinct = false; return ok })
	for i := range q.OrderBy {
		add(func(c *Query) bool { c.OrderBy = append(c.OrderBy[:i], c.OrderBy[i+1:]...); return true })
	}
	for i := range q.Aggs {
		add(func(c *Query) bool {
			c.Aggs = append(c.Aggs[:i], c.Aggs[i+1:]...)
			c.OrderBy = shiftOrdinals(c.OrderBy, len(c.Keys)+i+1)
			return true
		})
	}
	for i := range q.Keys {
		add(func(c *Query) bool {
			c.Keys = append(c.Keys[:i], c.Keys[i+1:]...)
			c.OrderBy = shiftOrdinals(c.OrderBy, i+1)
			return c.Having == "" || len(c.Keys) > 0
		})
	}
	return out
}

// shiftOrdinals drops ORDER BY ordinal k and renumbers those after it.
func shiftOrdinals(ob []string, k int) []string {
	var out []string
	for _, o := range ob {
		var i int
		rest := ""
		if n, _ := fmt.Sscanf(o, "%d", &i); n != 1 {
			continue
		}
		if j := strings.IndexByte(o, ' '); j >= 0 {
			rest = o[j:]
		}
		switch {
		case i == k:
			continue
		case i > k:
			i--
		}
		out = append(out, fmt.Sprintf("%d%s", i, rest))
	}
	return out
}

// Generator produces random queries over GenTables from a seed.
type Generator struct {
	r   *rand.Rand
	tab GenTable
}

// NewGenerator returns a generator seeded with seed.
func NewGenerator(seed uint64) *Generator {
	return &Generator{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

func (g *Generator) pick(n int) int { return g.r.IntN(n) }

func (g *Generator) chance(p float64) bool { return g.r.Float64() < p }

func (g *Generator) col(k ColKind) (string, bool) { return g.column(k, true) }

// column returns a random column of kind k; big says whether Big columns
// may be picked.
func (g *Generator) column(k ColKind, big bool) (string, bool) {
	var names []string
	for _, c := range g.tab.Columns {
		if c.Kind == k && (big || !c.Big) {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	return names[g.pick(len(names))], true
}

// expr returns an expression of kind k (falling back to another kind's
// column when the table has none).
func (g *Generator) expr(k ColKind, depth int) string { return g.exprBig(k, depth, true) }

// exprBig is expr; with big false, Big columns are left out.
func (g *Generator) exprBig(k ColKind, depth int, big bool) string {
	c, ok := g.column(k, big)
	arith := func() string {
		if a, ok := g.column(k, false); ok {
			return a
		}
		return "1"
	}
	if !ok {
		switch k {
		case CFloat:
			return g.exprBig(CInt, depth, big) + " / 2"
		case CTime:
			if d, ok := g.col(CDate); ok {
				return "date_trunc('month', " + d + ")"
			}
		}
		c, _ = g.column(CInt, big)
		return c
	}
	if depth <= 0 || g.chance(0.45) {
		return c
	}
	switch k {
	case CInt:
		switch g.pick(15) {
		case 0:
			return fmt.Sprintf("%s + %d", arith(), g.pick(20)-10)
		case 1:
			return fmt.Sprintf("%s %% %d", c, 2+g.pick(9))
		case 2:
			return fmt.Sprintf("%s // %d", c, 1+g.pick(7))
		case 3:
			return fmt.Sprintf("%s * %d", arith(), g.pick(5)-2)
		case 4:
			return fmt.Sprintf("abs(%s)", arith())
		case 5:
			return fmt.Sprintf("CASE WHEN %s THEN %s END", g.pred(depth-1), c)
		case 6:
			return fmt.Sprintf("nullif(%s, %d)", c, g.pick(5))
		case 7:
			// Non-negative: UBIGINT with a negative integer is HUGEINT in
			// DuckDB, DOUBLE here (testdata/known_failures.txt).
			return fmt.Sprintf("coalesce(%s, %d)", c, g.pick(5))
		case 8:
			return fmt.Sprintf("length(%s)", g.expr(CString, depth-1))
		case 9:
			return fmt.Sprintf("extract(day FROM %s)", g.expr(CDate, depth-1))
		case 10:
			return fmt.Sprintf("%s - %s", arith(), g.exprBig(CInt, 0, false))
		case 11:
			return fmt.Sprintf("CAST(%s AS BIGINT)", g.exprBig(CFloat, depth-1, false))
		case 12:
			parts := []string{"hour", "minute", "second", "year", "month", "dow", "doy", "epoch"}
			return fmt.Sprintf("extract(%s FROM %s)", parts[g.pick(len(parts))], g.expr(CTime, 0))
		case 13:
			return fmt.Sprintf("CASE %s WHEN %d THEN NULL WHEN %d THEN %s ELSE %d END", c, g.pick(4), g.pick(4), c, g.pick(3))
		default:
			return fmt.Sprintf("CASE WHEN %s THEN %d ELSE %s END", g.pred(depth-1), g.pick(7), c)
		}
	case CFloat:
		switch g.pick(10) {
		case 0:
			return fmt.Sprintf("%s * %s", arith(), g.exprBig(CInt, 0, false))
		case 1:
			return fmt.Sprintf("%s / %s", g.exprBig(CInt, 0, false), g.exprBig(CInt, 0, false))
		case 2:
			return fmt.Sprintf("%s + %d.5", arith(), g.pick(5))
		case 3:
			return fmt.Sprintf("floor(%s)", c)
		case 4:
			return fmt.Sprintf("abs(%s)", arith())
		case 5:
			return fmt.Sprintf("%s * (%s / 2)", arith(), g.exprBig(CInt, 0, false))
		case 6:
			// Rounds to single precision; a FLOAT times 1.1 stays FLOAT.
			return fmt.Sprintf("CAST(%s AS FLOAT) * 1.1", arith())
		case 7:
			return fmt.Sprintf("round(%s, %d)", arith(), g.pick(3))
		case 8:
			return fmt.Sprintf("CAST(%s AS DOUBLE)", g.exprBig(CInt, 0, false))
		case 9:
			return fmt.Sprintf("coalesce(%s, %s)", c, g.floatConst())
		default:
			return fmt.Sprintf("-%s", arith())
		}
	case CString:
		switch g.pick(8) {
		case 0:
			// Starts before the first character are left out: DuckDB
			// answers them one way for ASCII columns and another for
			// constants (see testdata/known_failures.txt).
			return fmt.Sprintf("substring(%s, %d, %d)", c, g.pick(5)-1, g.pick(3))
		case 1:
			return fmt.Sprintf("upper(%s)", c)
		case 2:
			return fmt.Sprintf("%s || 'x'", c)
		case 3:
			return fmt.Sprintf("coalesce(%s, 'none')", c)
		case 5:
			return fmt.Sprintf("CAST(%s AS VARCHAR)", g.expr(CInt, 0))
		case 6:
			return fmt.Sprintf("lower(%s)", c)
		default:
			return fmt.Sprintf("substring(%s, %d)", c, 1+g.pick(3))
		}
	case CDate:
		switch g.pick(4) {
		case 0:
			return fmt.Sprintf("%s + %d", c, g.pick(9)-4)
		case 1:
			if t, ok := g.col(CTime); ok {
				return fmt.Sprintf("CAST(%s AS DATE)", t)
			}
			return c
		case 2:
			return fmt.Sprintf("%s - %d", c, g.pick(40))
		default:
			return c
		}
	case CTime:
		switch g.pick(6) {
		case 0:
			return fmt.Sprintf("date_trunc('hour', %s)", c)
		case 1:
			return fmt.Sprintf("date_trunc('day', %s)", c)
		case 2:
			return fmt.Sprintf("date_trunc('minute', %s)", c)
		case 3:
			return fmt.Sprintf("%s + INTERVAL %d MINUTE", c, g.pick(100)-50)
		default:
			return c
		}
	}
	return c
}

func (g *Generator) anyKind() ColKind {
	ks := []ColKind{CInt, CInt, CInt, CFloat, CString, CString, CDate, CTime, CBool}
	return ks[g.pick(len(ks))]
}

func (g *Generator) intConst() string {
	cs := []string{"0", "1", "2", "3", "-1", "7", "48", "100", "1920", "100000", "-500"}
	return cs[g.pick(len(cs))]
}

func (g *Generator) floatConst() string {
	// 0.1 and 1.1 differ as FLOAT and as DOUBLE (a FLOAT compares with
	// the FLOAT 0.1, with 1e-1 as DOUBLE).
	cs := []string{"0", "0.0", "-0.0", "3.75", "1.5", "-25", "'NaN'::DOUBLE", "'Infinity'::DOUBLE", "1e300", "10", "0.1", "1.1", "1e-1"}
	return cs[g.pick(len(cs))]
}

func (g *Generator) strConst() string {
	cs := []string{"''", "'a'", "'ab'", "'k1'", "'k50'", "'x0'", "'ca'", "'zz'"}
	return cs[g.pick(len(cs))]
}

func (g *Generator) cmp() string {
	ops := []string{"=", "<>", "<", "<=", ">", ">="}
	return ops[g.pick(len(ops))]
}

// pred returns a boolean expression.
func (g *Generator) pred(depth int) string {
	if depth > 0 && g.chance(0.3) {
		switch g.pick(3) {
		case 0:
			return fmt.Sprintf("(%s AND %s)", g.pred(depth-1), g.pred(depth-1))
		case 1:
			return fmt.Sprintf("(%s OR %s)", g.pred(depth-1), g.pred(depth-1))
		default:
			return fmt.Sprintf("NOT (%s)", g.pred(depth-1))
		}
	}
	switch g.pick(14) {
	case 11:
		return fmt.Sprintf("%s %s %s", g.expr(CString, 0), g.cmp(), g.expr(CString, 1))
	case 12:
		return fmt.Sprintf("%s %s NULL", g.expr(g.anyKind(), 0), g.cmp())
	case 13:
		return fmt.Sprintf("%s BETWEEN %s AND %s", g.expr(CFloat, 0), g.floatConst(), g.floatConst())
	case 0, 1:
		return fmt.Sprintf("%s %s %s", g.expr(CInt, depth), g.cmp(), g.intConst())
	case 2:
		return fmt.Sprintf("%s %s %s", g.expr(CFloat, depth), g.cmp(), g.floatConst())
	case 3:
		return fmt.Sprintf("%s %s %s", g.expr(CString, depth), g.cmp(), g.strConst())
	case 4:
		pats := []string{"'__'", "'k1%'", "'%a%'", "'_'", "'%'", "''"}
		not := ""
		if g.chance(0.3) {
			not = "NOT "
		}
		return fmt.Sprintf("%s %sLIKE %s", g.expr(CString, 0), not, pats[g.pick(len(pats))])
	case 5:
		k := g.anyKind()
		if g.chance(0.5) {
			return fmt.Sprintf("%s IS NULL", g.expr(k, depth))
		}
		return fmt.Sprintf("%s IS NOT NULL", g.expr(k, depth))
	case 6:
		return fmt.Sprintf("%s IN (%s, %s)", g.expr(CInt, 0), g.intConst(), g.intConst())
	case 7:
		return fmt.Sprintf("%s IN (%s)", g.expr(CFloat, 0), g.floatConst())
	case 8:
		return fmt.Sprintf("%s BETWEEN %s AND %s", g.expr(CInt, 0), g.intConst(), g.intConst())
	case 9:
		if c, ok := g.col(CBool); ok {
			return c
		}
		return fmt.Sprintf("%s > %s", g.expr(CInt, 0), g.expr(CInt, 0))
	default:
		if c, ok := g.col(CDate); ok {
			return fmt.Sprintf("%s %s DATE '2013-07-%02d'", c, g.cmp(), 1+g.pick(30))
		}
		if c, ok := g.col(CTime); ok {
			return fmt.Sprintf("%s %s TIMESTAMP '1970-01-01 00:00:00'", c, g.cmp())
		}
		return fmt.Sprintf("%s IS NULL", g.expr(CInt, 0))
	}
}

// agg returns an aggregate call.
func (g *Generator) agg() string {
	switch g.pick(10) {
	case 0:
		return "count(*)"
	case 1:
		return fmt.Sprintf("count(%s)", g.expr(g.anyKind(), 1))
	case 2:
		return fmt.Sprintf("sum(%s)", g.exprBig(CInt, 1, false))
	case 3:
		return fmt.Sprintf("sum(%s)", g.exprBig(CFloat, 1, false))
	case 4:
		k := []ColKind{CInt, CFloat}[g.pick(2)]
		return fmt.Sprintf("avg(%s)", g.exprBig(k, 1, false))
	case 5:
		return fmt.Sprintf("min(%s)", g.expr(g.anyKind(), 1))
	case 6:
		return fmt.Sprintf("max(%s)", g.expr(g.anyKind(), 1))
	case 7:
		return fmt.Sprintf("count(DISTINCT %s)", g.expr(g.anyKind(), 1))
	case 8:
		return fmt.Sprintf("sum(DISTINCT %s)", g.exprBig(CInt, 0, false))
	default:
		k := []ColKind{CInt, CFloat}[g.pick(2)]
		return fmt.Sprintf("avg(DISTINCT %s)", g.exprBig(k, 0, false))
	}
}

// numAgg returns an aggregate with a numeric result, for HAVING.
func (g *Generator) numAgg() string {
	switch g.pick(5) {
	case 0:
		return "count(*)"
	case 1:
		return fmt.Sprintf("count(%s)", g.expr(g.anyKind(), 1))
	case 2:
		return fmt.Sprintf("sum(%s)", g.exprBig(CInt, 1, false))
	case 3:
		return fmt.Sprintf("min(%s)", g.expr(CInt, 1))
	default:
		return fmt.Sprintf("count(DISTINCT %s)", g.expr(g.anyKind(), 1))
	}
}

// Next returns a random query.
func (g *Generator) Next() *Query {
	// The edge tables most often: they hold the NULLs, NaNs and types.
	w := []int{0, 0, 0, 0, 1, 1, 2, 2}
	g.tab = GenTables[w[g.pick(len(w))]]
	q := &Query{From: g.tab.Name, Limit: -1}
	if g.chance(0.5) {
		q.Where = g.pred(2)
	}
	switch shape := g.pick(10); {
	case shape < 6: // GROUP BY
		for range 1 + g.pick(3) {
			q.Keys = append(q.Keys, g.expr(g.anyKind(), 1))
		}
		for range 1 + g.pick(3) {
			q.Aggs = append(q.Aggs, g.agg())
		}
		if g.chance(0.25) {
			q.Having = fmt.Sprintf("%s %s %s", g.numAgg(), g.cmp(), g.intConst())
		}
	case shape < 7: // global aggregate
		for range 1 + g.pick(3) {
			q.Aggs = append(q.Aggs, g.agg())
		}
	case shape < 8: // DISTINCT
		q.Distinct = true
		for range 1 + g.pick(2) {
			q.Keys = append(q.Keys, g.expr(g.anyKind(), 1))
		}
	case shape < 9: // plain rows
		q.Plain = true
		for range 1 + g.pick(3) {
			q.Aggs = append(q.Aggs, g.expr(g.anyKind(), 1))
		}
		if !g.chance(0.3) {
			q.Limit = 1 + g.pick(20)
		}
	default: // an aggregate over a grouped subquery
		key := g.expr(g.anyKind(), 1)
		innerSQL := fmt.Sprintf("SELECT %s AS k, %s AS a FROM %s", key, g.agg(), g.tab.Name)
		if q.Where != "" {
			innerSQL += " WHERE " + q.Where
		}
		innerSQL += " GROUP BY " + key
		if g.chance(0.3) {
			innerSQL += fmt.Sprintf(" HAVING count(*) > %d", g.pick(3))
		}
		q = &Query{From: "(" + innerSQL + ") sub", Limit: -1}
		// The outer query always reads a: DuckDB drops an unread
		// aggregate of a subquery, and with it any error it would raise.
		q.Aggs = []string{"count(a)", "min(a)", "max(a)"}[g.pick(3):]
		if g.chance(0.5) {
			q.Aggs = append(q.Aggs, "count(*)")
		}
		if g.chance(0.3) {
			q.Where = "a IS NOT NULL"
		}
		if g.chance(0.3) {
			// Grouped again, by whether the inner key is NULL.
			q.Keys = []string{"k IS NULL"}
		}
		return q
	}
	if g.chance(0.4) {
		n := q.width()
		for _, i := range g.r.Perm(n)[:1+g.pick(n)] {
			dir := ""
			if g.chance(0.4) {
				dir = " DESC"
			}
			switch g.pick(6) {
			case 0:
				dir += " NULLS FIRST"
			case 1:
				dir += " NULLS LAST"
			}
			q.OrderBy = append(q.OrderBy, fmt.Sprintf("%d%s", i+1, dir))
		}
		if len(q.Keys) > 0 && g.chance(0.25) {
			// An expression, not an ordinal: the planner matches it to
			// the select list.
			q.OrderBy = append([]string{q.Keys[g.pick(len(q.Keys))] + " DESC"}, q.OrderBy...)
		}
		if q.Limit < 0 && g.chance(0.7) {
			q.Limit = 1 + g.pick(10)
			if g.chance(0.2) {
				q.Offset = g.pick(5)
			}
		}
	}
	return q
}

// Predicate returns a random predicate over a random table, for the
// metamorphic checks, and the table's name.
func (g *Generator) Predicate() (table, pred string) {
	g.tab = GenTables[g.pick(len(GenTables))]
	return g.tab.Name, g.pred(2)
}

// Key returns a random grouping expression over the table of the last
// Predicate.
func (g *Generator) Key() string { return g.expr(g.anyKind(), 1) }
