package sql

// Node is any node of the syntax tree.
type Node interface {
	// Pos is the position of the node's first token.
	Pos() Pos
}

// Statement is a parsed SQL statement: *Select, *Set, *Reset, *ShowTables, *ShowAll,
// *Describe or *Explain.
type Statement interface {
	Node
	// Source is the statement's SQL text as written, without the
	// terminating semicolon and surrounding whitespace.
	Source() string
	stmtNode()
}

// Span records where a statement lies in the parsed text. It is embedded in
// every statement.
type Span struct {
	Start Pos    // position of the statement's first token
	End   int    // byte offset just past the statement's last token
	Text  string // src[Start.Offset:End]
}

// Pos returns the position of the statement's first token.
func (s *Span) Pos() Pos { return s.Start }

// Source returns the statement's text.
func (s *Span) Source() string { return s.Text }

// Select is a SELECT statement (also the body of a subquery).
type Select struct {
	Span
	Distinct bool
	Items    []SelectItem
	From     TableRef // nil for SELECT without FROM
	Where    Expr     // nil when absent
	GroupBy  []Expr   // names, ordinals (integer literals) or expressions
	Having   Expr
	OrderBy  []OrderItem
	Limit    Expr // nil when absent
	Offset   Expr // nil when absent
}

// SelectItem is one entry of the select list: an expression with an
// optional alias, or * (Star, with Expr nil).
type SelectItem struct {
	Expr  Expr
	Alias string // "" when none was written
	Star  bool   // SELECT * (or t.* with StarTable set)
	// StarTable is the qualifier of a qualified star (t.*), "" otherwise.
	StarTable string
	Pos       Pos
}

// OrderItem is one key of ORDER BY.
type OrderItem struct {
	Expr Expr
	Desc bool
	// NullsFirst is nil when NULLS FIRST/LAST was not written (DuckDB's
	// default is NULLS LAST for both directions).
	NullsFirst *bool
}

// Set is SET name = value (or SET name TO value).
type Set struct {
	Span
	Name  string // as written; setting names are case-insensitive
	Value Expr
}

// Reset is RESET name or RESET ALL: the setting (or every setting) goes
// back to its default.
type Reset struct {
	Span
	Name string // as written; "" with All
	All  bool
}

// ShowTables is SHOW TABLES.
type ShowTables struct {
	Span
}

// ShowAll is SHOW ALL: every session setting with its value.
type ShowAll struct {
	Span
}

// Describe is DESCRIBE t, DESCRIBE 'file.parquet' or DESCRIBE SELECT …
// (then Table is a *Subquery without alias).
type Describe struct {
	Span
	Table TableRef
}

// Explain is EXPLAIN [ANALYZE] statement.
type Explain struct {
	Span
	Analyze bool
	Stmt    Statement
}

func (*Select) stmtNode()     {}
func (*Set) stmtNode()        {}
func (*Reset) stmtNode()      {}
func (*ShowTables) stmtNode() {}
func (*ShowAll) stmtNode()    {}
func (*Describe) stmtNode()   {}
func (*Explain) stmtNode()    {}

// TableRef is the source of a FROM clause: *TableName, *FileRef or
// *Subquery.
type TableRef interface {
	Node
	tableRef()
}

// TableName is a named table, optionally aliased.
type TableName struct {
	Name  string
	Alias string
	At    Pos
}

// FileRef is a file read directly: FROM 'hits.parquet' or
// FROM read_parquet('hits.parquet').
type FileRef struct {
	Path  string
	Alias string
	At    Pos
}

// Subquery is a parenthesised SELECT in FROM.
type Subquery struct {
	Select *Select
	Alias  string
	At     Pos
}

// Pos returns the position of the table name.
func (t *TableName) Pos() Pos { return t.At }

// Pos returns the position of the file name.
func (t *FileRef) Pos() Pos { return t.At }

// Pos returns the position of the opening parenthesis.
func (t *Subquery) Pos() Pos { return t.At }

func (*TableName) tableRef() {}
func (*FileRef) tableRef()   {}
func (*Subquery) tableRef()  {}

// Expr is an expression node: *Ident, *Literal, *Unary, *Binary, *Call,
// *Case, *In, *Like, *IsNull, *Between, *Extract or *Cast. Parentheses are
// not kept; Format re-inserts those the precedence needs.
type Expr interface {
	Node
	exprNode()
}

// Ident is a column reference, optionally qualified by a table name.
type Ident struct {
	Table string // "" when unqualified
	Name  string // spelling kept; "quoted" identifiers without the quotes
	At    Pos
}

// LitKind is the kind of a literal.
type LitKind uint8

// Literal kinds.
const (
	LitInt       LitKind = iota // Int holds the value
	LitFloat                    // Float holds the value
	LitString                   // Str holds the unescaped value
	LitNull                     // NULL
	LitBool                     // Int is 1 for TRUE, 0 for FALSE
	LitDate                     // DATE '…': Str the text (parsed by the binder)
	LitTimestamp                // TIMESTAMP '…': Str the text (parsed by the binder)
	LitInterval                 // INTERVAL n unit: Int the count, Unit the unit, Str the text of n
)

var litKindNames = [...]string{
	LitInt: "integer", LitFloat: "float", LitString: "string", LitNull: "NULL", LitBool: "boolean",
	LitDate: "date", LitTimestamp: "timestamp", LitInterval: "interval",
}

// String names the literal kind.
func (k LitKind) String() string {
	if int(k) < len(litKindNames) {
		return litKindNames[k]
	}
	return "literal"
}

// Literal is a constant.
type Literal struct {
	Kind  LitKind
	Text  string // the literal's source text
	Int   int64
	Float float64
	Str   string
	Unit  string // LitInterval: lower-case singular unit, e.g. "day", "minute"
	At    Pos
}

// Op is a unary or binary operator.
type Op uint8

// Operators.
const (
	OpInvalid Op = iota
	// Unary.
	OpNeg  // -x
	OpPlus // +x
	OpNot  // NOT x
	// Arithmetic.
	OpAdd    // +
	OpSub    // -
	OpMul    // *
	OpDiv    // /   (integer / integer gives DOUBLE)
	OpIntDiv // //  (integer division)
	OpMod    // %
	OpConcat // ||
	// Comparison.
	OpEq // =
	OpNe // <> or !=
	OpLt // <
	OpLe // <=
	OpGt // >
	OpGe // >=
	// Logical.
	OpAnd // AND
	OpOr  // OR
)

var opNames = [...]string{
	OpInvalid: "?", OpNeg: "-", OpPlus: "+", OpNot: "NOT",
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpIntDiv: "//", OpMod: "%", OpConcat: "||",
	OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=",
	OpAnd: "AND", OpOr: "OR",
}

// String returns the operator as SQL writes it.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "?"
}

// IsComparison reports whether o is one of = <> < <= > >=.
func (o Op) IsComparison() bool { return o >= OpEq && o <= OpGe }

// Unary is a prefix operator applied to X: -x, +x, NOT x.
type Unary struct {
	Op Op
	X  Expr
	At Pos
}

// Binary is X Op Y: arithmetic, comparison, ||, AND, OR.
type Binary struct {
	Op Op
	X  Expr
	Y  Expr
	At Pos // position of X's first token (the expression's start)
	// OpPos is the position of the operator token.
	OpPos Pos
}

// Call is a function call f(args), count(*), count(DISTINCT x).
type Call struct {
	Name     string // lower-case
	Args     []Expr
	Distinct bool
	Star     bool // f(*)
	At       Pos
}

// When is one WHEN … THEN … arm of a CASE.
type When struct {
	Cond   Expr
	Result Expr
}

// Case is CASE [operand] WHEN … THEN … [ELSE …] END.
type Case struct {
	Operand Expr // nil for a searched CASE
	Whens   []When
	Else    Expr // nil when absent
	At      Pos
}

// In is X [NOT] IN (list).
type In struct {
	X    Expr
	List []Expr
	Not  bool
	At   Pos
}

// Like is X [NOT] LIKE|ILIKE pattern.
type Like struct {
	X       Expr
	Pattern Expr
	Not     bool
	ILike   bool
	At      Pos
}

// IsNull is X IS [NOT] NULL.
type IsNull struct {
	X   Expr
	Not bool
	At  Pos
}

// Between is X [NOT] BETWEEN Lo AND Hi.
type Between struct {
	X   Expr
	Lo  Expr
	Hi  Expr
	Not bool
	At  Pos
}

// Extract is EXTRACT(field FROM x).
type Extract struct {
	Field string // lower-case: year, month, day, hour, minute, second, dow, epoch, …
	X     Expr
	At    Pos
}

// Cast is CAST(x AS type) or x::type.
type Cast struct {
	X    Expr
	Type string // upper-case type name as written, e.g. "BIGINT", "VARCHAR"
	At   Pos
}

// Pos returns the identifier's position.
func (e *Ident) Pos() Pos { return e.At }

// Pos returns the literal's position.
func (e *Literal) Pos() Pos { return e.At }

// Pos returns the operator's position.
func (e *Unary) Pos() Pos { return e.At }

// Pos returns the position of the left operand.
func (e *Binary) Pos() Pos { return e.At }

// Pos returns the position of the function name.
func (e *Call) Pos() Pos { return e.At }

// Pos returns the position of CASE.
func (e *Case) Pos() Pos { return e.At }

// Pos returns the position of the tested expression.
func (e *In) Pos() Pos { return e.At }

// Pos returns the position of the tested expression.
func (e *Like) Pos() Pos { return e.At }

// Pos returns the position of the tested expression.
func (e *IsNull) Pos() Pos { return e.At }

// Pos returns the position of the tested expression.
func (e *Between) Pos() Pos { return e.At }

// Pos returns the position of EXTRACT.
func (e *Extract) Pos() Pos { return e.At }

// Pos returns the position of CAST or of the cast operand.
func (e *Cast) Pos() Pos { return e.At }

func (*Ident) exprNode()   {}
func (*Literal) exprNode() {}
func (*Unary) exprNode()   {}
func (*Binary) exprNode()  {}
func (*Call) exprNode()    {}
func (*Case) exprNode()    {}
func (*In) exprNode()      {}
func (*Like) exprNode()    {}
func (*IsNull) exprNode()  {}
func (*Between) exprNode() {}
func (*Extract) exprNode() {}
func (*Cast) exprNode()    {}

// Walk calls fn for e and, while fn returns true, for each of its
// sub-expressions in depth-first order. Nil expressions are skipped.
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch e := e.(type) {
	case *Unary:
		Walk(e.X, fn)
	case *Binary:
		Walk(e.X, fn)
		Walk(e.Y, fn)
	case *Call:
		for _, a := range e.Args {
			Walk(a, fn)
		}
	case *Case:
		Walk(e.Operand, fn)
		for _, w := range e.Whens {
			Walk(w.Cond, fn)
			Walk(w.Result, fn)
		}
		Walk(e.Else, fn)
	case *In:
		Walk(e.X, fn)
		for _, a := range e.List {
			Walk(a, fn)
		}
	case *Like:
		Walk(e.X, fn)
		Walk(e.Pattern, fn)
	case *IsNull:
		Walk(e.X, fn)
	case *Between:
		Walk(e.X, fn)
		Walk(e.Lo, fn)
		Walk(e.Hi, fn)
	case *Extract:
		Walk(e.X, fn)
	case *Cast:
		Walk(e.X, fn)
	}
}

// aggregateNames lists the aggregate functions the engine knows.
var aggregateNames = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"any_value": true, "first": true, "mean": true,
}

// IsAggregate reports whether name (lower-case) is an aggregate function.
func IsAggregate(name string) bool { return aggregateNames[name] }

// HasAggregate reports whether e contains an aggregate call.
func HasAggregate(e Expr) bool {
	found := false
	Walk(e, func(x Expr) bool {
		if c, ok := x.(*Call); ok && IsAggregate(c.Name) {
			found = true
		}
		return !found
	})
	return found
}
