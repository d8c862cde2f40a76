package sql

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxDepth bounds the nesting of expressions and subqueries, so that hostile
// input cannot exhaust the stack.
const MaxDepth = 1000

// Parse parses src as a sequence of ;-separated statements. Empty
// statements are skipped. The error, if any, is an *Error.
func Parse(src string) ([]Statement, error) {
	return ParseContext(context.Background(), src)
}

// ParseContext is Parse stopped by ctx: a cancelled context ends
// tokenizing and parsing within a few thousand tokens, with an error that
// wraps ctx.Err().
func ParseContext(ctx context.Context, src string) ([]Statement, error) {
	return ParseLimit(ctx, src, 0, nil)
}

// ParseLimit is ParseContext for a caller with a memory budget of maxBytes
// (<= 0: none beyond MaxSourceBytes): the parser allocates up to
// ParseBytesPerToken per token, so input with more tokens than the budget
// allows is refused before any statement is built, with an *Error at the
// first token past it that wraps cause.
func ParseLimit(ctx context.Context, src string, maxBytes int64, cause error) ([]Statement, error) {
	maxTokens := 0
	if maxBytes > 0 {
		maxTokens = int(max(maxBytes/ParseBytesPerToken, 1))
	}
	toks, err := tokenize(ctx, src, maxTokens, cause)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks, ctx: ctx}
	var stmts []Statement
	for {
		for p.tok().Kind == TokSemi {
			p.i++
		}
		if p.tok().Kind == TokEOF {
			return stmts, nil
		}
		if len(stmts) == MaxStatements {
			return nil, p.errorf(p.tok().Pos, "too many statements: at most %d are accepted at once", MaxStatements)
		}
		s, err := p.statement()
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, s)
		switch p.tok().Kind {
		case TokSemi, TokEOF:
		default:
			if err := p.unsupportedClause(); err != nil {
				return nil, err
			}
			return nil, p.expected("';' or end of input")
		}
	}
}

// ParseOne parses src, which must hold exactly one statement (a trailing
// semicolon is allowed).
func ParseOne(src string) (Statement, error) {
	stmts, err := Parse(src)
	if err != nil {
		return nil, err
	}
	switch len(stmts) {
	case 0:
		return nil, &Error{Pos: endPos(src), Msg: "expected a statement, found end of input"}
	case 1:
		return stmts[0], nil
	}
	return nil, &Error{Pos: stmts[1].Pos(), Msg: "expected one statement, found several"}
}

// ParseExpr parses src as a single expression.
func ParseExpr(src string) (Expr, error) {
	toks, err := Tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok().Kind != TokEOF {
		return nil, p.expected("end of expression")
	}
	return e, nil
}

// endPos is the position just past the end of src.
func endPos(src string) Pos {
	l := lexer{src: src, pos: Pos{Line: 1, Col: 1}}
	for l.pos.Offset < len(src) {
		l.advance()
	}
	return l.pos
}

type parser struct {
	src   string
	toks  []Token
	i     int
	depth int
	ctx   context.Context // nil: not cancellable
	steps int
}

func (p *parser) tok() Token { return p.toks[p.i] }

func (p *parser) peek(k int) Token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() Token {
	t := p.toks[p.i]
	if t.Kind != TokEOF {
		p.i++
	}
	return t
}

// lastEnd is the end offset of the last consumed token.
func (p *parser) lastEnd() int {
	if p.i == 0 {
		return 0
	}
	return p.toks[p.i-1].End
}

// isKw reports whether the current token is the keyword kw (upper-case).
func (p *parser) isKw(kw string) bool { return isKwTok(p.tok(), kw) }

func isKwTok(t Token, kw string) bool {
	return t.Kind == TokIdent && len(t.Text) == len(kw) && strings.EqualFold(t.Text, kw)
}

// acceptKw consumes the keyword kw if it is next.
func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) error {
	if !p.acceptKw(kw) {
		return p.expected(kw)
	}
	return nil
}

func (p *parser) accept(k TokenKind) bool {
	if p.tok().Kind == k {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(k TokenKind) (Token, error) {
	if p.tok().Kind != k {
		return Token{}, p.expected(k.String())
	}
	return p.next(), nil
}

// expected builds "expected what, found <current token>".
func (p *parser) expected(what string) error {
	t := p.tok()
	return &Error{Pos: t.Pos, Msg: fmt.Sprintf("expected %s, found %s", what, t.describe())}
}

func (p *parser) errorf(pos Pos, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) enter() error {
	if p.steps++; p.steps%checkEvery == 0 && p.ctx != nil {
		if err := p.ctx.Err(); err != nil {
			return fmt.Errorf("parsing: %w", err)
		}
	}
	p.depth++
	if p.depth > MaxDepth {
		return p.errorf(p.tok().Pos, "expression nested too deeply (more than %d levels)", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) span(start Token) Span {
	end := p.lastEnd()
	if end < start.Pos.Offset {
		end = start.Pos.Offset
	}
	return Span{Start: start.Pos, End: end, Text: p.src[start.Pos.Offset:end]}
}

func (p *parser) statement() (Statement, error) {
	t := p.tok()
	switch {
	case p.isKw("SELECT"):
		return p.selectStmt()
	case p.isKw("SET"):
		return p.setStmt()
	case p.isKw("RESET"):
		p.next()
		p.acceptKw("SESSION")
		if p.acceptKw("ALL") {
			return &Reset{Span: p.span(t), All: true}, nil
		}
		name, err := p.name("setting name or ALL")
		if err != nil {
			return nil, err
		}
		return &Reset{Span: p.span(t), Name: name}, nil
	case p.isKw("SHOW"):
		p.next()
		if p.acceptKw("ALL") {
			return &ShowAll{Span: p.span(t)}, nil
		}
		if !p.acceptKw("TABLES") {
			return nil, p.expected("TABLES or ALL")
		}
		return &ShowTables{Span: p.span(t)}, nil
	case p.isKw("DESCRIBE") || p.isKw("DESC"):
		p.next()
		var ref TableRef
		if p.isKw("SELECT") {
			s, err := p.selectStmt()
			if err != nil {
				return nil, err
			}
			ref = &Subquery{Select: s, At: s.Start}
		} else {
			var err error
			if ref, err = p.tableRef(false); err != nil {
				return nil, err
			}
		}
		return &Describe{Span: p.span(t), Table: ref}, nil
	case p.isKw("EXPLAIN"):
		p.next()
		analyze := p.acceptKw("ANALYZE") || p.acceptKw("ANALYSE")
		if p.isKw("EXPLAIN") {
			return nil, p.expected("statement to explain")
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		s, err := p.statement()
		p.leave()
		if err != nil {
			return nil, err
		}
		return &Explain{Span: p.span(t), Analyze: analyze, Stmt: s}, nil
	}
	if f := unsupportedStatement(t); f != "" {
		return nil, p.errorf(t.Pos, "%s is not supported", f)
	}
	return nil, p.expected("SELECT, SET, RESET, SHOW, DESCRIBE or EXPLAIN")
}

// unsupportedStatement names the feature of a statement that starts with
// t and that the engine does not have, or returns "".
func unsupportedStatement(t Token) string {
	if t.Kind != TokIdent {
		return ""
	}
	switch strings.ToUpper(t.Text) {
	case "WITH":
		return "WITH (common table expressions)"
	case "FROM":
		return "FROM-first syntax (FROM t SELECT …)"
	case "VALUES":
		return "VALUES"
	case "DESCRIBE", "SHOW":
		return strings.ToUpper(t.Text) + " as a query"
	case "CREATE", "INSERT", "UPDATE", "DELETE", "DROP", "ALTER", "COPY", "ATTACH", "CHECKPOINT", "PRAGMA", "CALL", "SUMMARIZE", "PIVOT", "UNPIVOT", "TABLE":
		return strings.ToUpper(t.Text) + " statement"
	}
	return ""
}

func (p *parser) setStmt() (*Set, error) {
	t := p.next() // SET
	p.acceptKw("GLOBAL")
	if !p.acceptKw("SESSION") {
		p.acceptKw("LOCAL")
	}
	name, err := p.name("setting name")
	if err != nil {
		return nil, err
	}
	for p.tok().Kind == TokDot {
		p.next()
		n, err := p.name("setting name")
		if err != nil {
			return nil, err
		}
		name += "." + n
	}
	if !p.accept(TokEq) && !p.acceptKw("TO") {
		return nil, p.expected("'=' or TO")
	}
	if on := p.tok(); isKwTok(on, "ON") {
		// ON is reserved (JOIN ... ON), but a value here, as in
		// PostgreSQL and DuckDB: SET huge_pages = on.
		p.next()
		return &Set{Span: p.span(t), Name: name, Value: &Literal{Kind: LitString, Text: on.Text, Str: "on", At: on.Pos}}, nil
	}
	v, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	return &Set{Span: p.span(t), Name: name, Value: v}, nil
}

// name reads an identifier or a quoted identifier, rejecting reserved words.
func (p *parser) name(what string) (string, error) {
	t := p.tok()
	switch {
	case t.Kind == TokQIdent:
		p.next()
		return t.Value, nil
	case t.Kind == TokIdent && !isKeyword(t.Text):
		p.next()
		return t.Value, nil
	}
	return "", p.expected(what)
}

func (p *parser) selectStmt() (*Select, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	start := p.next() // SELECT
	s := &Select{}
	if p.acceptKw("DISTINCT") {
		s.Distinct = true
		if p.isKw("ON") {
			return nil, p.errorf(p.tok().Pos, "DISTINCT ON is not supported")
		}
	} else {
		p.acceptKw("ALL")
	}
	for {
		item, err := p.selectItem()
		if err != nil {
			return nil, err
		}
		s.Items = append(s.Items, item)
		if !p.accept(TokComma) {
			break
		}
		if t := p.tok(); t.Kind == TokEOF || t.Kind == TokSemi || t.Kind == TokRParen || isKwTok(t, "FROM") {
			break // a trailing comma, as DuckDB allows
		}
	}
	var err error
	if p.acceptKw("FROM") {
		if s.From, err = p.tableRef(true); err != nil {
			return nil, err
		}
		switch t := p.tok(); {
		case t.Kind == TokComma:
			return nil, p.errorf(t.Pos, "joins are not supported: FROM takes a single table")
		case isKwTok(t, "JOIN") || (t.Kind == TokIdent && joinWords[strings.ToUpper(t.Text)]):
			return nil, p.errorf(t.Pos, "joins are not supported: FROM takes a single table")
		}
	}
	if p.acceptKw("WHERE") {
		if s.Where, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("GROUP") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if p.isKw("ALL") || p.tok().Kind == TokStar {
			return nil, p.errorf(p.tok().Pos, "GROUP BY ALL is not supported; list the grouping columns")
		}
		for i := 0; ; i++ {
			t := p.peek(i)
			if t.Kind == TokEOF || t.Kind == TokSemi || isKwTok(t, "HAVING") || isKwTok(t, "ORDER") || isKwTok(t, "LIMIT") {
				break
			}
			if isKwTok(t, "GROUPING") && isKwTok(p.peek(i+1), "SETS") || (isKwTok(t, "ROLLUP") || isKwTok(t, "CUBE")) && p.peek(i+1).Kind == TokLParen {
				return nil, p.errorf(t.Pos, "GROUPING SETS, ROLLUP and CUBE are not supported")
			}
			if t.Kind == TokLParen && p.peek(i+1).Kind == TokRParen && (i == 0 || p.peek(i-1).Kind == TokComma) {
				return nil, p.errorf(t.Pos, "GROUP BY () (the empty grouping set) is not supported")
			}
		}
		if s.GroupBy, err = p.exprList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("HAVING") {
		if s.Having, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("ORDER") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if p.isKw("ALL") || p.tok().Kind == TokStar {
			return nil, p.errorf(p.tok().Pos, "ORDER BY ALL is not supported; list the ORDER BY keys")
		}
		for {
			e, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			item := OrderItem{Expr: e}
			if p.acceptKw("DESC") {
				item.Desc = true
			} else {
				p.acceptKw("ASC")
			}
			if p.acceptKw("NULLS") {
				var first bool
				switch {
				case p.acceptKw("FIRST"):
					first = true
				case p.acceptKw("LAST"):
				default:
					return nil, p.expected("FIRST or LAST")
				}
				item.NullsFirst = &first
			}
			s.OrderBy = append(s.OrderBy, item)
			if !p.accept(TokComma) {
				break
			}
		}
	}
	if p.acceptKw("LIMIT") {
		if s.Limit, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("OFFSET") {
		if s.Offset, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	if s.Offset != nil && s.Limit == nil && p.acceptKw("LIMIT") {
		if s.Limit, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	if t := p.tok(); isKwTok(t, "UNION") || isKwTok(t, "EXCEPT") || isKwTok(t, "INTERSECT") {
		return nil, p.errorf(t.Pos, "%s is not supported", strings.ToUpper(t.Text))
	}
	s.Span = p.span(start)
	return s, nil
}

func (p *parser) exprList() ([]Expr, error) {
	var list []Expr
	for {
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		list = append(list, e)
		if !p.accept(TokComma) {
			return list, nil
		}
	}
}

func (p *parser) selectItem() (SelectItem, error) {
	t := p.tok()
	if t.Kind == TokStar {
		p.next()
		return SelectItem{Star: true, Pos: t.Pos}, nil
	}
	if (t.Kind == TokIdent || t.Kind == TokQIdent) && p.peek(1).Kind == TokDot && p.peek(2).Kind == TokStar {
		if t.Kind == TokIdent && isKeyword(t.Text) {
			return SelectItem{}, p.expected("expression")
		}
		p.i += 3
		return SelectItem{Star: true, StarTable: t.Value, Pos: t.Pos}, nil
	}
	e, err := p.expr(0)
	if err != nil {
		return SelectItem{}, err
	}
	item := SelectItem{Expr: e, Pos: t.Pos}
	if p.acceptKw("AS") {
		a := p.tok()
		switch {
		case a.Kind == TokString:
			p.next()
			item.Alias = a.Value
		default:
			if item.Alias, err = p.name("alias"); err != nil {
				return SelectItem{}, err
			}
		}
	} else if a := p.tok(); a.Kind == TokQIdent || (a.Kind == TokIdent && !isKeyword(a.Text)) {
		p.next()
		item.Alias = a.Value
	}
	return item, nil
}

// tableRef parses a FROM source: name, 'file', read_parquet('file'),
// (SELECT …), each with an optional alias when aliasOK.
func (p *parser) tableRef(aliasOK bool) (TableRef, error) {
	t := p.tok()
	var ref TableRef
	switch {
	case t.Kind == TokString:
		p.next()
		ref = &FileRef{Path: t.Value, At: t.Pos}
	case t.Kind == TokLParen:
		p.next()
		if f := unsupportedStatement(p.tok()); f != "" && !p.isKw("SELECT") {
			return nil, p.errorf(p.tok().Pos, "%s in FROM is not supported", f)
		}
		if !p.isKw("SELECT") {
			return nil, p.expected("SELECT")
		}
		s, err := p.selectStmt()
		if err != nil {
			return nil, err
		}
		if err := p.unsupportedClause(); err != nil {
			return nil, err
		}
		if _, err := p.expect(TokRParen); err != nil {
			return nil, err
		}
		ref = &Subquery{Select: s, At: t.Pos}
	case t.Kind == TokIdent && p.peek(1).Kind == TokLParen && !isKeyword(t.Text):
		name := strings.ToLower(t.Text)
		if name != "read_parquet" && name != "parquet_scan" {
			return nil, p.errorf(t.Pos, "table function %s is not supported (only read_parquet)", name)
		}
		p.i += 2
		f, err := p.expect(TokString)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(TokRParen); err != nil {
			return nil, err
		}
		ref = &FileRef{Path: f.Value, At: t.Pos}
	default:
		name, err := p.name("table name")
		if err != nil {
			return nil, err
		}
		for p.tok().Kind == TokDot {
			p.next()
			n, err := p.name("table name")
			if err != nil {
				return nil, err
			}
			name += "." + n
		}
		ref = &TableName{Name: name, At: t.Pos}
	}
	if !aliasOK {
		return ref, nil
	}
	alias := ""
	if p.acceptKw("AS") {
		a, err := p.name("alias")
		if err != nil {
			return nil, err
		}
		alias = a
	} else if a := p.tok(); a.Kind == TokQIdent || (a.Kind == TokIdent && !isKeyword(a.Text) && !joinWords[strings.ToUpper(a.Text)] && !unsupportedClauses[strings.ToUpper(a.Text)]) {
		p.next()
		alias = a.Value
	}
	if p.tok().Kind == TokLParen && alias != "" {
		return nil, p.errorf(p.tok().Pos, "column aliases of a table (%s(c1, …)) are not supported", alias)
	}
	switch r := ref.(type) {
	case *TableName:
		r.Alias = alias
	case *FileRef:
		r.Alias = alias
	case *Subquery:
		r.Alias = alias
	}
	return ref, nil
}

// Binding powers of the binary and postfix operators (higher binds tighter),
// as in PostgreSQL and DuckDB: OR < AND < NOT < IS < comparison < BETWEEN,
// IN, LIKE, ILIKE < || < + - < * / // % < unary < ::. Comparisons do not
// chain: a < b = c is a syntax error, as in DuckDB.
const (
	precOr      = 1
	precAnd     = 2
	precNot     = 3
	precIs      = 4
	precCompare = 5
	precLikeIn  = 6
	precConcat  = 7
	precAdd     = 8
	precMul     = 9
	precUnary   = 10
	precCast    = 11
)

// infixPrec returns the binding power of the current token as an infix or
// postfix operator, or 0 when it is none.
func (p *parser) infixPrec() int {
	t := p.tok()
	switch t.Kind {
	case TokEq, TokNe, TokLt, TokLe, TokGt, TokGe:
		return precCompare
	case TokConcat:
		return precConcat
	case TokPlus, TokMinus:
		return precAdd
	case TokStar, TokSlash, TokSlashSlash, TokPercent:
		return precMul
	case TokDColon:
		return precCast
	case TokIdent:
		switch strings.ToUpper(t.Text) {
		case "OR":
			return precOr
		case "AND":
			return precAnd
		case "IS":
			return precIs
		case "LIKE", "ILIKE", "IN", "BETWEEN":
			return precLikeIn
		case "NOT":
			n := p.peek(1)
			if isKwTok(n, "LIKE") || isKwTok(n, "ILIKE") || isKwTok(n, "IN") || isKwTok(n, "BETWEEN") {
				return precLikeIn
			}
		}
	}
	return 0
}

var binaryOps = map[TokenKind]Op{
	TokEq: OpEq, TokNe: OpNe, TokLt: OpLt, TokLe: OpLe, TokGt: OpGt, TokGe: OpGe,
	TokConcat: OpConcat, TokPlus: OpAdd, TokMinus: OpSub, TokStar: OpMul, TokSlash: OpDiv,
	TokSlashSlash: OpIntDiv, TokPercent: OpMod,
}

// expr parses an expression whose operators all bind tighter than minPrec.
func (p *parser) expr(minPrec int) (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	left, err := p.prefix()
	if err != nil {
		return nil, err
	}
	chained := false // left is an unparenthesised comparison
	for {
		prec := p.infixPrec()
		if prec == 0 || prec <= minPrec {
			return left, nil
		}
		if prec == precCompare && chained {
			return nil, p.errorf(p.tok().Pos, "comparison operators cannot be chained; add parentheses")
		}
		if left, err = p.infix(left, prec); err != nil {
			return nil, err
		}
		chained = prec == precCompare
	}
}

func (p *parser) infix(left Expr, prec int) (Expr, error) {
	t := p.next()
	if op, ok := binaryOps[t.Kind]; ok {
		right, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		return &Binary{Op: op, X: left, Y: right, At: left.Pos(), OpPos: t.Pos}, nil
	}
	if t.Kind == TokDColon {
		typ, err := p.typeName()
		if err != nil {
			return nil, err
		}
		return &Cast{X: left, Type: typ, At: left.Pos()}, nil
	}
	kw := strings.ToUpper(t.Text)
	not := false
	if kw == "NOT" {
		not = true
		kw = strings.ToUpper(p.next().Text)
	}
	switch kw {
	case "OR", "AND":
		right, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		op := OpAnd
		if kw == "OR" {
			op = OpOr
		}
		return &Binary{Op: op, X: left, Y: right, At: left.Pos(), OpPos: t.Pos}, nil
	case "IS":
		n := p.acceptKw("NOT")
		if !p.acceptKw("NULL") {
			return nil, p.expected("NULL or NOT NULL")
		}
		return &IsNull{X: left, Not: n, At: left.Pos()}, nil
	case "LIKE", "ILIKE":
		pat, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		if p.isKw("ESCAPE") {
			return nil, p.errorf(p.tok().Pos, "LIKE ... ESCAPE is not supported")
		}
		return &Like{X: left, Pattern: pat, Not: not, ILike: kw == "ILIKE", At: left.Pos()}, nil
	case "IN":
		if _, err := p.expect(TokLParen); err != nil {
			return nil, err
		}
		if p.isKw("SELECT") {
			return nil, p.errorf(p.tok().Pos, "IN (SELECT ...) is not supported")
		}
		list, err := p.exprList()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(TokRParen); err != nil {
			return nil, err
		}
		return &In{X: left, List: list, Not: not, At: left.Pos()}, nil
	case "BETWEEN":
		lo, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AND"); err != nil {
			return nil, err
		}
		hi, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		return &Between{X: left, Lo: lo, Hi: hi, Not: not, At: left.Pos()}, nil
	}
	return nil, p.errorf(t.Pos, "unexpected %s", t.describe())
}

// typeName parses a type name for CAST: words (DOUBLE PRECISION) and an
// optional parenthesised parameter list, returned upper-case.
func (p *parser) typeName() (string, error) {
	t := p.tok()
	if t.Kind != TokIdent && t.Kind != TokQIdent {
		return "", p.expected("type name")
	}
	p.next()
	name := strings.ToUpper(t.Value)
	if name == "DOUBLE" && p.acceptKw("PRECISION") {
		name = "DOUBLE PRECISION"
	}
	if (name == "TIMESTAMP" || name == "TIME") && p.acceptKw("WITH") {
		return "", p.errorf(t.Pos, "%s WITH TIME ZONE is not supported", name)
	}
	switch name {
	case "STRUCT", "MAP", "UNION", "LIST", "ROW":
		return "", p.errorf(t.Pos, "type %s is not supported", name)
	}
	if p.accept(TokLParen) {
		var params []string
		for {
			n, err := p.expect(TokInt)
			if err != nil {
				return "", err
			}
			params = append(params, n.Text)
			if !p.accept(TokComma) {
				break
			}
		}
		if _, err := p.expect(TokRParen); err != nil {
			return "", err
		}
		name += "(" + strings.Join(params, ",") + ")"
	}
	return name, nil
}

// prefix parses a primary expression or a prefix operator application.
func (p *parser) prefix() (Expr, error) {
	t := p.tok()
	switch t.Kind {
	case TokInt:
		p.next()
		v, err := strconv.ParseInt(t.Text, 10, 64)
		if err != nil {
			// Too large for BIGINT: keep it as a DOUBLE, as DuckDB widens.
			f, _ := strconv.ParseFloat(t.Text, 64)
			return &Literal{Kind: LitFloat, Text: t.Text, Float: f, At: t.Pos}, nil
		}
		return &Literal{Kind: LitInt, Text: t.Text, Int: v, At: t.Pos}, nil
	case TokFloat:
		p.next()
		f, err := strconv.ParseFloat(t.Text, 64)
		if err != nil && !math.IsInf(f, 0) {
			return nil, p.errorf(t.Pos, "invalid number %s", t.Text)
		}
		return &Literal{Kind: LitFloat, Text: t.Text, Float: f, At: t.Pos}, nil
	case TokString:
		p.next()
		return &Literal{Kind: LitString, Text: t.Text, Str: t.Value, At: t.Pos}, nil
	case TokMinus, TokPlus:
		p.next()
		x, err := p.expr(precUnary)
		if err != nil {
			return nil, err
		}
		op := OpNeg
		if t.Kind == TokPlus {
			op = OpPlus
		}
		return &Unary{Op: op, X: x, At: t.Pos}, nil
	case TokLParen:
		p.next()
		if p.isKw("SELECT") {
			return nil, p.errorf(p.tok().Pos, "scalar subqueries are not supported")
		}
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if p.tok().Kind == TokComma {
			return nil, p.errorf(p.tok().Pos, "row values ((a, b)) are not supported")
		}
		if _, err := p.expect(TokRParen); err != nil {
			return nil, err
		}
		return x, nil
	case TokQIdent:
		return p.identOrCall()
	case TokIdent:
	default:
		return nil, p.expected("expression")
	}
	next := p.peek(1)
	switch strings.ToUpper(t.Text) {
	case "NULL":
		p.next()
		return &Literal{Kind: LitNull, Text: "NULL", At: t.Pos}, nil
	case "TRUE", "FALSE":
		p.next()
		v := int64(0)
		if strings.EqualFold(t.Text, "TRUE") {
			v = 1
		}
		return &Literal{Kind: LitBool, Text: strings.ToUpper(t.Text), Int: v, At: t.Pos}, nil
	case "NOT":
		p.next()
		x, err := p.expr(precNot)
		if err != nil {
			return nil, err
		}
		return &Unary{Op: OpNot, X: x, At: t.Pos}, nil
	case "CASE":
		return p.caseExpr()
	case "CAST", "TRY_CAST":
		if next.Kind != TokLParen {
			break
		}
		p.i += 2
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AS"); err != nil {
			return nil, err
		}
		typ, err := p.typeName()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(TokRParen); err != nil {
			return nil, err
		}
		return &Cast{X: x, Type: typ, At: t.Pos}, nil
	case "EXTRACT":
		if next.Kind != TokLParen {
			break
		}
		p.i += 2
		f := p.tok()
		var field string
		switch f.Kind {
		case TokIdent, TokQIdent, TokString:
			field = strings.ToLower(f.Value)
			p.next()
		default:
			return nil, p.expected("date part")
		}
		if err := p.expectKw("FROM"); err != nil {
			return nil, err
		}
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(TokRParen); err != nil {
			return nil, err
		}
		return &Extract{Field: field, X: x, At: t.Pos}, nil
	case "DATE", "TIMESTAMP":
		if next.Kind != TokString {
			break
		}
		p.i += 2
		return typedLiteral(t, next)
	case "INTERVAL":
		if next.Kind == TokLParen {
			return nil, p.errorf(t.Pos, "INTERVAL (expression) unit is not supported; only constant intervals")
		}
		if next.Kind != TokString && next.Kind != TokInt {
			break
		}
		p.i += 2
		return p.interval(t, next)
	case "EXISTS":
		return nil, p.errorf(t.Pos, "EXISTS is not supported")
	case "TIME", "TIMETZ", "TIMESTAMPTZ", "BLOB", "BITSTRING", "UUID", "HUGEINT", "UHUGEINT", "DECIMAL", "NUMERIC":
		if next.Kind == TokString {
			return nil, p.errorf(t.Pos, "%s literals are not supported", strings.ToUpper(t.Text))
		}
	}
	if isKeyword(t.Text) {
		return nil, p.expected("expression")
	}
	return p.identOrCall()
}

// identOrCall parses name, table.name or name(args).
func (p *parser) identOrCall() (Expr, error) {
	t := p.next()
	if p.tok().Kind == TokLParen && t.Kind == TokIdent {
		return p.call(t)
	}
	if p.tok().Kind == TokDot {
		p.next()
		n := p.tok()
		if n.Kind == TokQIdent || (n.Kind == TokIdent && !isKeyword(n.Text)) {
			p.next()
			return &Ident{Table: t.Value, Name: n.Value, At: t.Pos}, nil
		}
		return nil, p.expected("column name")
	}
	return &Ident{Name: t.Value, At: t.Pos}, nil
}

func (p *parser) call(name Token) (Expr, error) {
	p.next() // (
	c := &Call{Name: strings.ToLower(name.Text), At: name.Pos}
	if p.accept(TokStar) {
		c.Star = true
		if _, err := p.expect(TokRParen); err != nil {
			return nil, err
		}
		return c, p.afterCall()
	}
	if p.accept(TokRParen) {
		return c, p.afterCall()
	}
	if p.acceptKw("DISTINCT") {
		c.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	args, err := p.exprList()
	if err != nil {
		return nil, err
	}
	c.Args = args
	if p.isKw("ORDER") {
		return nil, p.errorf(p.tok().Pos, "ORDER BY inside a function call is not supported")
	}
	if p.isKw("EXPORT_STATE") {
		return nil, p.errorf(p.tok().Pos, "EXPORT_STATE is not supported")
	}
	if _, err := p.expect(TokRParen); err != nil {
		return nil, err
	}
	if err := p.afterCall(); err != nil {
		return nil, err
	}
	return c, nil
}

// unsupportedClauses are the clauses of a SELECT, and the set operations,
// that the engine does not have.
var unsupportedClauses = map[string]bool{"QUALIFY": true, "WINDOW": true, "INTERSECT": true, "EXCEPT": true, "UNION": true, "USING": true, "TABLESAMPLE": true}

// unsupportedClause returns the error for one of unsupportedClauses where
// a SELECT ends.
func (p *parser) unsupportedClause() error {
	if t := p.tok(); t.Kind == TokIdent && unsupportedClauses[strings.ToUpper(t.Text)] {
		return p.errorf(t.Pos, "%s is not supported", strings.ToUpper(t.Text))
	}
	return nil
}

// afterCall refuses the clauses that may follow a function call and that
// the engine does not have.
func (p *parser) afterCall() error {
	switch {
	case p.isKw("FILTER") || p.isKw("OVER") || p.isKw("EXPORT_STATE"):
		return p.errorf(p.tok().Pos, "%s is not supported", strings.ToUpper(p.tok().Text))
	case p.isKw("WITHIN"):
		return p.errorf(p.tok().Pos, "WITHIN GROUP is not supported")
	}
	return nil
}

func (p *parser) caseExpr() (Expr, error) {
	t := p.next() // CASE
	c := &Case{At: t.Pos}
	var err error
	if !p.isKw("WHEN") && !p.isKw("END") {
		if c.Operand, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	for p.acceptKw("WHEN") {
		var w When
		if w.Cond, err = p.expr(0); err != nil {
			return nil, err
		}
		if err := p.expectKw("THEN"); err != nil {
			return nil, err
		}
		if w.Result, err = p.expr(0); err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		return nil, p.expected("WHEN")
	}
	if p.acceptKw("ELSE") {
		if c.Else, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	if err := p.expectKw("END"); err != nil {
		return nil, err
	}
	return c, nil
}

// typedLiteral builds DATE '…' or TIMESTAMP '…'. The text is kept as
// written; the binder parses and validates it (expr.ParseDate and
// expr.ParseTimestamp), so that date/time value rules live in one place
// with the casts that share them.
func typedLiteral(kw, s Token) (Expr, error) {
	kind := LitTimestamp
	if strings.EqualFold(kw.Text, "DATE") {
		kind = LitDate
	}
	return &Literal{Kind: kind, Text: s.Text, Str: s.Value, At: kw.Pos}, nil
}

// intervalUnits maps unit spellings to their canonical singular names.
var intervalUnits = map[string]string{
	"microsecond": "microsecond", "microseconds": "microsecond", "us": "microsecond",
	"millisecond": "millisecond", "milliseconds": "millisecond", "ms": "millisecond",
	"second": "second", "seconds": "second", "s": "second", "minute": "minute", "minutes": "minute",
	"hour": "hour", "hours": "hour", "h": "hour", "day": "day", "days": "day", "d": "day",
	"week": "week", "weeks": "week", "month": "month", "months": "month", "year": "year", "years": "year",
}

// interval parses INTERVAL n unit and INTERVAL 'n unit' / INTERVAL 'n' unit.
func (p *parser) interval(kw, v Token) (Expr, error) {
	text := v.Value
	if v.Kind == TokInt {
		text = v.Text
	}
	fields := strings.Fields(text)
	var unit string
	switch len(fields) {
	case 1:
		u := p.tok()
		if u.Kind != TokIdent {
			return nil, p.expected("interval unit")
		}
		p.next()
		unit = strings.ToLower(u.Text)
		if _, ok := intervalUnits[unit]; !ok {
			return nil, p.errorf(u.Pos, "unknown interval unit %q", u.Text)
		}
	case 2:
		if v.Kind != TokString {
			return nil, p.errorf(v.Pos, "invalid interval %s", v.Text)
		}
		unit = strings.ToLower(fields[1])
		if _, ok := intervalUnits[unit]; !ok {
			return nil, p.errorf(v.Pos, "unknown interval unit %q", fields[1])
		}
	default:
		return nil, p.errorf(v.Pos, "invalid interval %s: expected a count and a unit", v.Text)
	}
	n, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return nil, p.errorf(v.Pos, "invalid interval count %q", fields[0])
	}
	return &Literal{Kind: LitInterval, Text: fields[0], Str: fields[0], Int: n, Unit: intervalUnits[unit], At: kw.Pos}, nil
}
