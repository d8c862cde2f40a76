package sql

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func readClickBench(t testing.TB) []string {
	t.Helper()
	f, err := os.Open("testdata/clickbench.sql")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			qs = append(qs, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return qs
}

// TestClickBench parses all 43 queries, checks the statement text and that
// every expression survives a Format/ParseExpr round trip.
func TestClickBench(t *testing.T) {
	qs := readClickBench(t)
	if len(qs) != 43 {
		t.Fatalf("got %d queries, want 43", len(qs))
	}
	for i, q := range qs {
		st, err := ParseOne(q)
		if err != nil {
			t.Errorf("Q%d: %v\n%s", i, err, err.(*Error).Caret(q))
			continue
		}
		s, ok := st.(*Select)
		if !ok {
			t.Errorf("Q%d: got %T, want *Select", i, st)
			continue
		}
		if want := strings.TrimSuffix(q, ";"); s.Text != want {
			t.Errorf("Q%d: Text = %q, want %q", i, s.Text, want)
		}
		if tn, ok := s.From.(*TableName); !ok || tn.Name != "hits" {
			t.Errorf("Q%d: From = %#v, want table hits", i, s.From)
		}
		var all []Expr
		for _, it := range s.Items {
			if it.Expr != nil {
				all = append(all, it.Expr)
			}
		}
		all = append(all, s.Where, s.Having, s.Limit, s.Offset)
		all = append(all, s.GroupBy...)
		for _, o := range s.OrderBy {
			all = append(all, o.Expr)
		}
		for _, e := range all {
			if e == nil {
				continue
			}
			checkRoundTrip(t, e)
		}
	}
}

func checkRoundTrip(t *testing.T, e Expr) {
	t.Helper()
	text := Format(e)
	back, err := ParseExpr(text)
	if err != nil {
		t.Errorf("reparse of %q: %v", text, err)
		return
	}
	if !Equal(e, back) {
		t.Errorf("round trip of %q gave %q", text, Format(back))
	}
}

func TestClickBenchShapes(t *testing.T) {
	qs := readClickBench(t)
	sel := func(i int) *Select {
		st, err := ParseOne(qs[i])
		if err != nil {
			t.Fatalf("Q%d: %v", i, err)
		}
		return st.(*Select)
	}
	// Q0: count(*).
	if c, ok := sel(0).Items[0].Expr.(*Call); !ok || c.Name != "count" || !c.Star {
		t.Errorf("Q0 item = %#v", sel(0).Items[0].Expr)
	}
	// Q4: count(DISTINCT UserID).
	if c := sel(4).Items[0].Expr.(*Call); !c.Distinct || Format(c) != "count(DISTINCT UserID)" {
		t.Errorf("Q4 = %s", Format(c))
	}
	// Q8: alias, ORDER BY u DESC, LIMIT 10.
	q8 := sel(8)
	if q8.Items[1].Alias != "u" || !q8.OrderBy[0].Desc || Format(q8.Limit) != "10" {
		t.Errorf("Q8 = %+v", q8)
	}
	// Q18: extract(minute FROM toDateTime(EventTime)).
	if x, ok := sel(18).Items[1].Expr.(*Extract); !ok || x.Field != "minute" || Format(x.X) != "todatetime(EventTime)" {
		t.Errorf("Q18 item = %s", Format(sel(18).Items[1].Expr))
	}
	// Q19: a large BIGINT literal.
	if b := sel(19).Where.(*Binary); b.Y.(*Literal).Int != 435090932899640449 {
		t.Errorf("Q19 where = %s", Format(b))
	}
	// Q22: NOT LIKE.
	if got := Format(sel(22).Where); got != "Title LIKE '%Google%' AND URL NOT LIKE '%.google.%' AND SearchPhrase <> ''" {
		t.Errorf("Q22 where = %s", got)
	}
	// Q27: HAVING.
	if got := Format(sel(27).Having); got != "count(*) > 100000" {
		t.Errorf("Q27 having = %s", got)
	}
	// Q28: the backslash in '\1' is literal.
	if c := sel(28).Items[0].Expr.(*Call); c.Name != "regexp_replace" || c.Args[2].(*Literal).Str != `\1` {
		t.Errorf("Q28 = %s", Format(c))
	}
	// Q34: GROUP BY 1.
	if l, ok := sel(34).GroupBy[0].(*Literal); !ok || l.Kind != LitInt || l.Int != 1 {
		t.Errorf("Q34 group by = %#v", sel(34).GroupBy[0])
	}
	// Q38: LIMIT 10 OFFSET 1000.
	if q := sel(38); Format(q.Limit) != "10" || Format(q.Offset) != "1000" {
		t.Errorf("Q38 limit/offset")
	}
	// Q39: CASE with parenthesised AND.
	if got := Format(sel(39).Items[3].Expr); got != "CASE WHEN SearchEngineID = 0 AND AdvEngineID = 0 THEN Referer ELSE '' END" {
		t.Errorf("Q39 = %s", got)
	}
	// Q40: IN (-1, 6).
	var in *In
	Walk(sel(40).Where, func(e Expr) bool {
		if x, ok := e.(*In); ok {
			in = x
		}
		return true
	})
	if in == nil || Format(in) != "TraficSourceID IN (-1, 6)" {
		t.Errorf("Q40 IN = %v", in)
	}
	// Q42: GROUP BY and ORDER BY equal to the select item.
	q42 := sel(42)
	if !Equal(q42.Items[0].Expr, q42.GroupBy[0]) || !Equal(q42.GroupBy[0], q42.OrderBy[0].Expr) {
		t.Errorf("Q42 expressions differ")
	}
	if got := Format(q42.GroupBy[0]); got != "date_trunc('minute', todatetime(EventTime))" {
		t.Errorf("Q42 = %s", got)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1+2*3", "1 + 2 * 3"},
		{"(1+2)*3", "(1 + 2) * 3"},
		{"1-(2-3)", "1 - (2 - 3)"},
		{"1-2-3", "1 - 2 - 3"},
		{"a OR b AND c", "a OR b AND c"},
		{"(a OR b) AND c", "(a OR b) AND c"},
		{"NOT a = b", "NOT a = b"},
		{"(NOT a) = b", "(NOT a) = b"},
		{"-x", "-x"},
		{"- -x", "-(-x)"},
		{"-(1+2)", "-(1 + 2)"},
		{"a || b || 'c'", "a || b || 'c'"},
		{"a || b = 'x'", "a || b = 'x'"},
		{"(a = b) || 'x'", "(a = b) || 'x'"},
		{"x // 2 % 3", "x // 2 % 3"},
		{"x BETWEEN 1 AND 2 AND y", "x BETWEEN 1 AND 2 AND y"},
		{"x NOT BETWEEN 1+1 AND 3", "x NOT BETWEEN 1 + 1 AND 3"},
		{"x IS NOT NULL", "x IS NOT NULL"},
		{"x is null or y not in (1,2)", "x IS NULL OR y NOT IN (1, 2)"},
		{"x ILIKE 'a%'", "x ILIKE 'a%'"},
		{"'it''s'", "'it''s'"},
		{`"weird col" + "select"`, `"weird col" + "select"`},
		{"t.a", "t.a"},
		{"CAST(x AS varchar(10))", "CAST(x AS VARCHAR(10))"},
		{"x::bigint + 1", "CAST(x AS BIGINT) + 1"},
		{"DATE '2013-07-01'", "DATE '2013-07-01'"},
		{"TIMESTAMP '2013-07-01 10:00:00'", "TIMESTAMP '2013-07-01 10:00:00'"},
		{"interval 1 day", "INTERVAL 1 DAY"},
		{"INTERVAL '5' minutes", "INTERVAL 5 MINUTE"},
		{"INTERVAL '2 hours'", "INTERVAL 2 HOUR"},
		{"CASE x WHEN 1 THEN 'a' END", "CASE x WHEN 1 THEN 'a' END"},
		{"COUNT(*)", "count(*)"},
		{"Sum(DISTINCT x)", "sum(DISTINCT x)"},
		{"now()", "now()"},
		{"1.5e3", "1.5e3"},
		{".5", ".5"},
		{"NULL", "NULL"},
		{"true AND FALSE", "TRUE AND FALSE"},
		{"EXTRACT(YEAR FROM d)", "extract(year FROM d)"},
		{"x /* c */ + -- c\n 1", "x + 1"},
		{"a <> b AND a != c", "a <> b AND a <> c"},
		{"a == 1", "a = 1"},
		{"a = b IS NULL", "a = b IS NULL"},
		{"(a = b) = c", "(a = b) = c"},
		{"a = (b = c)", "a = (b = c)"},
		{"NOT a IS NULL", "NOT a IS NULL"},
		{"a = b BETWEEN c AND d", "a = b BETWEEN c AND d"},
		{"x NOT IN (1) = false", "x NOT IN (1) = FALSE"},
		{"NOT false = 2 - 1 NOT IN (0, 1)", "NOT FALSE = 2 - 1 NOT IN (0, 1)"},
		{"a LIKE 'x' || 'y'", "a LIKE 'x' || 'y'"},
		{"(a LIKE b) LIKE c", "(a LIKE b) LIKE c"},
		{"x IS NULL IS NULL", "(x IS NULL) IS NULL"},
		{"-1 IS NOT NULL = 2", "(-1 IS NOT NULL) = 2"},

		{"99999999999999999999", "99999999999999999999"},
	}
	for _, tt := range tests {
		e, err := ParseExpr(tt.in)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tt.in, err)
			continue
		}
		if got := Format(e); got != tt.want {
			t.Errorf("Format(ParseExpr(%q)) = %q, want %q", tt.in, got, tt.want)
		}
		checkRoundTrip(t, e)
	}
}

func TestPrecedence(t *testing.T) {
	tests := []struct {
		in   string
		want Expr
	}{
		{"a = b IS NULL", &IsNull{X: &Binary{Op: OpEq, X: &Ident{Name: "a"}, Y: &Ident{Name: "b"}}}},
		{"a = b BETWEEN c AND d", &Binary{Op: OpEq, X: &Ident{Name: "a"},
			Y: &Between{X: &Ident{Name: "b"}, Lo: &Ident{Name: "c"}, Hi: &Ident{Name: "d"}}}},
		{"NOT a = b", &Unary{Op: OpNot, X: &Binary{Op: OpEq, X: &Ident{Name: "a"}, Y: &Ident{Name: "b"}}}},
		{"a || b LIKE c", &Like{X: &Binary{Op: OpConcat, X: &Ident{Name: "a"}, Y: &Ident{Name: "b"}}, Pattern: &Ident{Name: "c"}}},
		{"a + b || c", &Binary{Op: OpConcat, X: &Binary{Op: OpAdd, X: &Ident{Name: "a"}, Y: &Ident{Name: "b"}}, Y: &Ident{Name: "c"}}},
		{"-a::int", &Unary{Op: OpNeg, X: &Cast{X: &Ident{Name: "a"}, Type: "INT"}}},
		{"a OR b AND NOT c", &Binary{Op: OpOr, X: &Ident{Name: "a"},
			Y: &Binary{Op: OpAnd, X: &Ident{Name: "b"}, Y: &Unary{Op: OpNot, X: &Ident{Name: "c"}}}}},
	}
	for _, tt := range tests {
		got, err := ParseExpr(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if !Equal(got, tt.want) {
			t.Errorf("%s parsed as %s, want %s", tt.in, Format(got), Format(tt.want))
		}
	}
}

func TestStatements(t *testing.T) {
	src := "SET threads = 4;; SET group_by TO 'radix';\nSHOW TABLES; describe hits; DESCRIBE SELECT 1;" +
		" EXPLAIN ANALYZE SELECT a FROM 'x.parquet' AS t; SELECT 1+1; SELECT * FROM read_parquet('h.parquet')" +
		" ; select distinct a b, \"c\" FROM (SELECT a, c FROM hits) s ORDER BY 1 DESC NULLS FIRST, 2 OFFSET 5"
	stmts, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	wantText := []string{
		"SET threads = 4", "SET group_by TO 'radix'", "SHOW TABLES", "describe hits", "DESCRIBE SELECT 1",
		"EXPLAIN ANALYZE SELECT a FROM 'x.parquet' AS t", "SELECT 1+1", "SELECT * FROM read_parquet('h.parquet')",
		`select distinct a b, "c" FROM (SELECT a, c FROM hits) s ORDER BY 1 DESC NULLS FIRST, 2 OFFSET 5`,
	}
	if len(stmts) != len(wantText) {
		t.Fatalf("got %d statements, want %d", len(stmts), len(wantText))
	}
	for i, s := range stmts {
		if s.Source() != wantText[i] {
			t.Errorf("statement %d text = %q, want %q", i, s.Source(), wantText[i])
		}
		if src[s.Pos().Offset:s.Pos().Offset+len(s.Source())] != s.Source() {
			t.Errorf("statement %d: Pos does not match text", i)
		}
	}
	if s := stmts[0].(*Set); s.Name != "threads" || Format(s.Value) != "4" {
		t.Errorf("SET = %+v", s)
	}
	if s := stmts[1].(*Set); s.Name != "group_by" || s.Value.(*Literal).Str != "radix" {
		t.Errorf("SET TO = %+v", s)
	}
	if p := stmts[2].Pos(); p.Line != 2 || p.Col != 1 {
		t.Errorf("SHOW TABLES at %v, want 2:1", p)
	}
	if d := stmts[3].(*Describe); d.Table.(*TableName).Name != "hits" {
		t.Errorf("DESCRIBE = %+v", d)
	}
	if d := stmts[4].(*Describe); d.Table.(*Subquery).Select == nil {
		t.Errorf("DESCRIBE SELECT = %+v", d)
	}
	ex := stmts[5].(*Explain)
	if !ex.Analyze {
		t.Error("EXPLAIN ANALYZE: Analyze not set")
	}
	if f := ex.Stmt.(*Select).From.(*FileRef); f.Path != "x.parquet" || f.Alias != "t" {
		t.Errorf("FROM file = %+v", f)
	}
	if s := stmts[6].(*Select); s.From != nil || len(s.Items) != 1 {
		t.Errorf("SELECT 1+1 = %+v", s)
	}
	if s := stmts[7].(*Select); !s.Items[0].Star || s.From.(*FileRef).Path != "h.parquet" {
		t.Errorf("SELECT * = %+v", s)
	}
	s := stmts[8].(*Select)
	if !s.Distinct || s.Items[0].Alias != "b" || s.Items[1].Expr.(*Ident).Name != "c" {
		t.Errorf("select items = %+v", s.Items)
	}
	sub := s.From.(*Subquery)
	if sub.Alias != "s" || len(sub.Select.Items) != 2 {
		t.Errorf("subquery = %+v", sub)
	}
	if o := s.OrderBy[0]; !o.Desc || o.NullsFirst == nil || !*o.NullsFirst || s.OrderBy[1].Desc || s.OrderBy[1].NullsFirst != nil {
		t.Errorf("order by = %+v", s.OrderBy)
	}
	if s.Limit != nil || Format(s.Offset) != "5" {
		t.Errorf("limit/offset = %v %v", s.Limit, s.Offset)
	}
}

func TestEmpty(t *testing.T) {
	for _, src := range []string{"", " ", ";;", "-- only a comment\n", "/* x */;"} {
		stmts, err := Parse(src)
		if err != nil || len(stmts) != 0 {
			t.Errorf("Parse(%q) = %v, %v; want no statements", src, stmts, err)
		}
	}
	if _, err := ParseOne(" "); err == nil {
		t.Error("ParseOne of empty input succeeded")
	}
	if _, err := ParseOne("SELECT 1; SELECT 2"); err == nil || err.Error() != "1:11: expected one statement, found several" {
		t.Errorf("ParseOne of two statements: %v", err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT FROM hits", "1:8: expected expression, found 'FROM'"},
		{"SELECT a FROM", "1:14: expected table name, found end of input"},
		{"SELECT a\nFROM hits WHERE", "2:16: expected expression, found end of input"},
		{"SELECT a FROM hits GROUP UserID", "1:26: expected BY, found 'UserID'"},
		{"SELECT (1", "1:10: expected ')', found end of input"},
		{"SELECT 1 2", "1:10: expected ';' or end of input, found '2'"},
		{"SELECT 'abc", "1:8: unterminated string"},
		{`SELECT "abc`, "1:8: unterminated quoted identifier"},
		{"SELECT 1 /* x", "1:10: unterminated comment"},
		{"SELECT 1 ? 2", "1:10: unexpected character '?'"},
		{"SELECT 12abc", "1:10: invalid character 'a' after number 12"},
		{"SELEC 1", "1:1: expected SELECT, SET, RESET, SHOW, DESCRIBE or EXPLAIN, found 'SELEC'"},
		{"SELECT a FROM t1, t2", "1:17: joins are not supported: FROM takes a single table"},
		{"SELECT a FROM t1 JOIN t2 ON x", "1:18: joins are not supported: FROM takes a single table"},
		{"SELECT a FROM t1 LEFT JOIN t2 ON x", "1:18: joins are not supported: FROM takes a single table"},
		{"SELECT x IS 3", "1:13: expected NULL or NOT NULL, found '3'"},
		{"SELECT CASE END", "1:13: expected WHEN, found 'END'"},
		{"SELECT CASE WHEN 1 THEN 2", "1:26: expected END, found end of input"},
		{"SELECT INTERVAL 1 fortnight", "1:19: unknown interval unit \"fortnight\""},
		{"SELECT x BETWEEN 1 OR 2", "1:20: expected AND, found 'OR'"},
		{"SELECT * FROM t ORDER BY a NULLS", "1:33: expected FIRST or LAST, found end of input"},
		{"SET x 1", "1:7: expected '=' or TO, found '1'"},
		{"SHOW x", "1:6: expected TABLES or ALL, found 'x'"},
		{"SELECT a FROM t UNION SELECT b FROM u", "1:17: UNION is not supported"},
		{"SELECT (SELECT 1)", "1:9: scalar subqueries are not supported"},
		{"SELECT ä +", "1:11: expected expression, found end of input"},
		{"SELECT\t\"\"", "1:8: zero-length quoted identifier"},
		{"SELECT count(*", "1:15: expected ')', found end of input"},
		{"SELECT f(1,)", "1:12: expected expression, found ')'"},
		{"SELECT a AS FROM", "1:13: expected alias, found 'FROM'"},
		{"EXPLAIN EXPLAIN SELECT 1", "1:9: expected statement to explain, found 'EXPLAIN'"},
		{"SELECT CAST(1 AS)", "1:17: expected type name, found ')'"},
		{"SELECT a < b = c", "1:14: comparison operators cannot be chained; add parentheses"},
		{"SELECT a = 1 <> b = 2", "1:14: comparison operators cannot be chained; add parentheses"},
		{"SELECT a FROM foo(1)", "1:15: table function foo is not supported (only read_parquet)"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error %q", tt.in, tt.want)
			continue
		}
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("Parse(%q) error is %T, want *Error", tt.in, err)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q) error = %q, want %q", tt.in, err.Error(), tt.want)
		}
		if e.Caret(tt.in) == "" {
			t.Errorf("Parse(%q): empty caret for %v", tt.in, e.Pos)
		}
	}
}

func TestCaret(t *testing.T) {
	src := "SELECT a +\n\tFROM hits"
	_, err := Parse(src)
	e := err.(*Error)
	want := "\tFROM hits\n\t^"
	if got := e.Caret(src); got != want {
		t.Errorf("Caret = %q, want %q", got, want)
	}
}

func TestDepthLimit(t *testing.T) {
	for _, src := range []string{
		"SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
		"SELECT " + strings.Repeat("-", 5000) + "1",
		"SELECT " + strings.Repeat("NOT ", 5000) + "1",
		strings.Repeat("EXPLAIN SELECT * FROM (", 2000),
	} {
		_, err := Parse(src)
		if err == nil {
			t.Errorf("deeply nested input parsed without error")
			continue
		}
		if !strings.Contains(err.Error(), "nested too deeply") && !strings.Contains(err.Error(), "expected") {
			t.Errorf("unexpected error %v", err)
		}
	}
	// Long flat chains are fine.
	if _, err := Parse("SELECT " + strings.Repeat("1 + ", 5000) + "1"); err != nil {
		t.Errorf("long chain: %v", err)
	}
}

func TestTokenize(t *testing.T) {
	toks, err := Tokenize("a.b::int <= 'x''y' || \"Q\"\"q\" -- c\n/*d*/ 1.5e-3 // %")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []TokenKind
	for _, tk := range toks {
		kinds = append(kinds, tk.Kind)
	}
	want := []TokenKind{TokIdent, TokDot, TokIdent, TokDColon, TokIdent, TokLe, TokString, TokConcat,
		TokQIdent, TokFloat, TokSlashSlash, TokPercent, TokEOF}
	if len(kinds) != len(want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("token %d = %v, want %v", i, kinds[i], want[i])
		}
	}
	if toks[6].Value != "x'y" || toks[8].Value != `Q"q` {
		t.Errorf("values = %q %q", toks[6].Value, toks[8].Value)
	}
	if p := toks[9].Pos; p.Line != 2 || p.Col != 7 {
		t.Errorf("number at %v, want 2:7", p)
	}
}

// checkPos verifies that an error position lies within src.
func checkPos(t *testing.T, src string, err error) {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v is %T, want *Error", err, err)
	}
	p := e.Pos
	if p.Offset < 0 || p.Offset > len(src) || p.Line < 1 || p.Col < 1 {
		t.Fatalf("error %v has invalid position %+v for %q", err, p, src)
	}
	// Line and Col must agree with Offset.
	prefix := src[:p.Offset]
	line := 1 + strings.Count(prefix, "\n")
	col := 1 + utf8.RuneCountInString(prefix[strings.LastIndexByte(prefix, '\n')+1:])
	if line != p.Line || col != p.Col {
		t.Fatalf("error %v: position %+v, but offset %d is %d:%d in %q", err, p, p.Offset, line, col, src)
	}
}

func FuzzLex(f *testing.F) {
	for _, q := range []string{"SELECT 1", "'a''b'", `"x"`, "1.5e+3", "/* x */ -- y\n", "a || b", "ä::int"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, src string) {
		toks, err := Tokenize(src)
		if err != nil {
			checkPos(t, src, err)
			return
		}
		prev := 0
		for _, tk := range toks {
			if tk.Pos.Offset < prev || tk.End < tk.Pos.Offset || tk.End > len(src) {
				t.Fatalf("token %+v out of order in %q", tk, src)
			}
			if src[tk.Pos.Offset:tk.End] != tk.Text {
				t.Fatalf("token text %q does not match source", tk.Text)
			}
			prev = tk.End
		}
		if toks[len(toks)-1].Kind != TokEOF {
			t.Fatal("no EOF token")
		}
	})
}

func TestResetAndBounds(t *testing.T) {
	stmts, err := Parse("RESET threads; RESET ALL; reset session memory_limit")
	if err != nil {
		t.Fatal(err)
	}
	want := []Reset{{Name: "threads"}, {All: true}, {Name: "memory_limit"}}
	for i, st := range stmts {
		r, ok := st.(*Reset)
		if !ok || r.Name != want[i].Name || r.All != want[i].All {
			t.Errorf("statement %d: %#v", i, st)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"RESET", "1:6: expected setting name or ALL, found end of input"},
		{strings.Repeat(" ", MaxSourceBytes) + "SELECT 1", "input too long"},
		{"SELECT " + strings.Repeat("(", MaxDepth+1), "1:1008: parentheses nested too deeply"},
		{strings.Repeat("SELECT 1;", MaxStatements+1), "too many statements"},
	} {
		_, err := Parse(tc.src)
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.30q: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, q := range readClickBench(f) {
		f.Add(q)
	}
	for _, q := range []string{"SET x = 1; SHOW TABLES", "EXPLAIN ANALYZE SELECT 1", "SELECT CASE WHEN a THEN b END",
		"SELECT x::int FROM 'f.parquet' t", "SELECT -(-1) NOT BETWEEN 1 AND 2", "DESCRIBE SELECT 1",
		"RESET ALL; RESET threads", "SELECT ((((1))))"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := Parse(src)
		if err != nil {
			checkPos(t, src, err)
			return
		}
		for _, s := range stmts {
			if s.Pos().Offset+len(s.Source()) > len(src) || src[s.Pos().Offset:s.Pos().Offset+len(s.Source())] != s.Source() {
				t.Fatalf("statement text %q does not match source %q", s.Source(), src)
			}
			if sel, ok := s.(*Select); ok {
				for _, it := range sel.Items {
					if it.Expr != nil {
						checkRoundTrip(t, it.Expr)
					}
				}
				if sel.Where != nil {
					checkRoundTrip(t, sel.Where)
				}
			}
		}
	})
}

// TestParseCancel: cancelling the context stops a long parse soon.
func TestParseCancel(t *testing.T) {
	src := "SELECT " + strings.Repeat("a + 1, ", (MaxSourceBytes-20)/7) + "a FROM t"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ParseContext(ctx, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before the start: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ParseContext(ctx, src)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	t0 := time.Now()
	cancel()
	err := <-done
	if d := time.Since(t0); d > 200*time.Millisecond {
		t.Errorf("parse stopped %v after the cancel (%v)", d, err)
	}
}

// TestParseLimit: input with more tokens than a memory budget allows the
// parser is refused before any statement is built, at the first token past
// the bound, with an error that wraps the caller's cause; input within it
// parses as Parse does.
func TestParseLimit(t *testing.T) {
	cause := errors.New("memory limit exceeded")
	tests := []struct {
		src     string
		bytes   int64
		wantErr bool
	}{
		{"SELECT a, b FROM t", 100 * ParseBytesPerToken, false},
		{"SELECT a, b FROM t", 0, false}, // no budget
		{"SELECT " + strings.Repeat("a, ", 200) + "b FROM t", 100 * ParseBytesPerToken, true},
		{strings.Repeat("SELECT 1;", 40), 100 * ParseBytesPerToken, true},
	}
	for _, tc := range tests {
		_, err := ParseLimit(context.Background(), tc.src, tc.bytes, cause)
		if (err != nil) != tc.wantErr {
			t.Errorf("%.30q under %d bytes: error %v, want error %v", tc.src, tc.bytes, err, tc.wantErr)
			continue
		}
		if err == nil {
			continue
		}
		var se *Error
		if !errors.As(err, &se) || !errors.Is(err, cause) || se.Pos.Offset == 0 {
			t.Errorf("%.30q: %v, want a positioned *Error wrapping the cause", tc.src, err)
		}
	}
}

// TestCaretLongLine: on a long line Caret shows a window around the
// column, marked with ellipses, and the caret still points at it.
func TestCaretLongLine(t *testing.T) {
	tests := []struct {
		line       string
		col        int
		lead, tail bool
	}{
		{strings.Repeat("a", 10), 5, false, false},
		{strings.Repeat("a", 1000) + "X" + strings.Repeat("b", 1000), 1001, true, true},
		{"X" + strings.Repeat("é", 5000), 1, false, true},
		{strings.Repeat("é", 5000) + "X", 5001, true, false},
	}
	for _, tt := range tests {
		e := &Error{Pos: Pos{Line: 2, Col: tt.col}}
		got := e.Caret("-- first\n" + tt.line + "\nSELECT 1")
		shown, caret, ok := strings.Cut(got, "\n")
		if !ok || len([]rune(shown)) > 2*caretContext+2 {
			t.Errorf("col %d: %d characters shown, want a window of at most %d", tt.col, len([]rune(shown)), 2*caretContext+2)
			continue
		}
		if strings.HasPrefix(shown, "…") != tt.lead || strings.HasSuffix(shown, "…") != tt.tail {
			t.Errorf("col %d: %q: ellipses wrong", tt.col, shown)
		}
		at := len([]rune(caret)) - 1
		if r := []rune(shown); at >= len(r) || (tt.col > 1 && r[at] != []rune(tt.line)[tt.col-1]) {
			t.Errorf("col %d: the caret points at %d of %q", tt.col, at, shown)
		}
	}
}

// TestShowAll: SHOW ALL parses to ShowAll, SHOW TABLES still to ShowTables.
func TestShowAll(t *testing.T) {
	stmts, err := Parse("show all; SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stmts[0].(*ShowAll); !ok || stmts[0].Source() != "show all" {
		t.Errorf("show all parsed to %T %q", stmts[0], stmts[0].Source())
	}
	if _, ok := stmts[1].(*ShowTables); !ok {
		t.Errorf("SHOW TABLES parsed to %T", stmts[1])
	}
}

// TestSetOn: ON, reserved elsewhere, is a SET value, as in PostgreSQL and
// DuckDB; anything after it is still an error.
func TestSetOn(t *testing.T) {
	tests := []struct {
		src, value, err string
	}{
		{"SET huge_pages = on", "on", ""},
		{"SET huge_pages TO ON", "on", ""},
		{"SET huge_pages = off", "off", ""},
		{"SET huge_pages = on + 1", "", "1:21"},
	}
	for _, tt := range tests {
		stmts, err := Parse(tt.src)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one at %s", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		s := stmts[0].(*Set)
		var got string
		switch v := s.Value.(type) {
		case *Literal:
			got = v.Str
		case *Ident:
			got = v.Name
		}
		if got != tt.value || s.Source() != tt.src {
			t.Errorf("%s: value %q, source %q; want %q", tt.src, got, s.Source(), tt.value)
		}
	}
}
