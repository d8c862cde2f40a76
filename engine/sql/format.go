package sql

import (
	"strconv"
	"strings"
)

// Format renders e as canonical SQL text: keywords upper-case, function
// names lower-case, single spaces around binary operators, and only the
// parentheses that precedence requires. It is used for result column names
// and in EXPLAIN, e.g. "sum(ResolutionWidth + 1)" or "count(*)".
func Format(e Expr) string {
	var b strings.Builder
	format(&b, e, 0)
	return b.String()
}

// exprPrec is the binding power of e's outermost operator; primary
// expressions bind tightest.
func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		switch e.Op {
		case OpOr:
			return precOr
		case OpAnd:
			return precAnd
		case OpConcat:
			return precConcat
		case OpAdd, OpSub:
			return precAdd
		case OpMul, OpDiv, OpIntDiv, OpMod:
			return precMul
		}
		return precCompare
	case *Unary:
		if e.Op == OpNot {
			return precNot
		}
		return precUnary
	case *IsNull:
		return precIs
	case *In, *Like, *Between:
		return precLikeIn
	case *Literal:
		// A negative number literal prints with a leading '-'.
		if (e.Kind == LitInt && e.Int < 0) || (e.Kind == LitFloat && e.Float < 0) {
			return precUnary
		}
	}
	return precCast + 1
}

// formatOperand writes e, parenthesised if it binds looser than min.
func formatOperand(b *strings.Builder, e Expr, min int) {
	if e != nil && exprPrec(e) < min {
		b.WriteByte('(')
		format(b, e, 0)
		b.WriteByte(')')
		return
	}
	format(b, e, min)
}

func format(b *strings.Builder, e Expr, _ int) {
	switch e := e.(type) {
	case nil:
		b.WriteString("<nil>")
	case *Ident:
		if e.Table != "" {
			b.WriteString(QuoteIdent(e.Table))
			b.WriteByte('.')
		}
		b.WriteString(QuoteIdent(e.Name))
	case *Literal:
		formatLiteral(b, e)
	case *Unary:
		b.WriteString(e.Op.String())
		if e.Op == OpNot {
			b.WriteByte(' ')
			formatOperand(b, e.X, precNot)
			return
		}
		// Avoid "--x", which would read as a comment.
		if u, ok := e.X.(*Unary); ok && u.Op != OpNot {
			b.WriteByte('(')
			format(b, e.X, 0)
			b.WriteByte(')')
			return
		}
		if l, ok := e.X.(*Literal); ok && exprPrec(l) == precUnary {
			b.WriteByte('(')
			format(b, e.X, 0)
			b.WriteByte(')')
			return
		}
		formatOperand(b, e.X, precUnary)
	case *Binary:
		p := exprPrec(e)
		lmin := p
		if p == precCompare { // comparisons do not chain
			lmin = p + 1
		}
		formatOperand(b, e.X, lmin)
		b.WriteByte(' ')
		b.WriteString(e.Op.String())
		b.WriteByte(' ')
		formatOperand(b, e.Y, p+1)
	case *Call:
		b.WriteString(e.Name)
		b.WriteByte('(')
		if e.Star {
			b.WriteByte('*')
		}
		if e.Distinct {
			b.WriteString("DISTINCT ")
		}
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			format(b, a, 0)
		}
		b.WriteByte(')')
	case *Case:
		b.WriteString("CASE")
		if e.Operand != nil {
			b.WriteByte(' ')
			format(b, e.Operand, 0)
		}
		for _, w := range e.Whens {
			b.WriteString(" WHEN ")
			format(b, w.Cond, 0)
			b.WriteString(" THEN ")
			format(b, w.Result, 0)
		}
		if e.Else != nil {
			b.WriteString(" ELSE ")
			format(b, e.Else, 0)
		}
		b.WriteString(" END")
	case *In:
		formatOperand(b, e.X, precLikeIn+1)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		for i, a := range e.List {
			if i > 0 {
				b.WriteString(", ")
			}
			format(b, a, 0)
		}
		b.WriteByte(')')
	case *Like:
		formatOperand(b, e.X, precLikeIn+1)
		if e.Not {
			b.WriteString(" NOT")
		}
		if e.ILike {
			b.WriteString(" ILIKE ")
		} else {
			b.WriteString(" LIKE ")
		}
		formatOperand(b, e.Pattern, precLikeIn+1)
	case *IsNull:
		formatOperand(b, e.X, precIs+1)
		if e.Not {
			b.WriteString(" IS NOT NULL")
		} else {
			b.WriteString(" IS NULL")
		}
	case *Between:
		formatOperand(b, e.X, precLikeIn+1)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" BETWEEN ")
		formatOperand(b, e.Lo, precLikeIn+1)
		b.WriteString(" AND ")
		formatOperand(b, e.Hi, precLikeIn+1)
	case *Extract:
		b.WriteString("extract(")
		b.WriteString(e.Field)
		b.WriteString(" FROM ")
		format(b, e.X, 0)
		b.WriteByte(')')
	case *Cast:
		b.WriteString("CAST(")
		format(b, e.X, 0)
		b.WriteString(" AS ")
		b.WriteString(e.Type)
		b.WriteByte(')')
	default:
		b.WriteString("<unknown>")
	}
}

func formatLiteral(b *strings.Builder, e *Literal) {
	switch e.Kind {
	case LitInt:
		b.WriteString(strconv.FormatInt(e.Int, 10))
	case LitFloat:
		if e.Text != "" {
			b.WriteString(e.Text)
		} else {
			b.WriteString(strconv.FormatFloat(e.Float, 'g', -1, 64))
		}
	case LitString:
		b.WriteString(QuoteString(e.Str))
	case LitNull:
		b.WriteString("NULL")
	case LitBool:
		if e.Int != 0 {
			b.WriteString("TRUE")
		} else {
			b.WriteString("FALSE")
		}
	case LitDate:
		b.WriteString("DATE ")
		b.WriteString(QuoteString(e.Str))
	case LitTimestamp:
		b.WriteString("TIMESTAMP ")
		b.WriteString(QuoteString(e.Str))
	case LitInterval:
		b.WriteString("INTERVAL ")
		b.WriteString(strconv.FormatInt(e.Int, 10))
		b.WriteByte(' ')
		b.WriteString(strings.ToUpper(e.Unit))
	}
}

// QuoteString renders s as a SQL string literal.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// QuoteIdent renders name as an identifier, double-quoting it when it is not
// a plain identifier or is a reserved word.
func QuoteIdent(name string) string {
	plain := name != "" && !isKeyword(name)
	for i, r := range name {
		if i == 0 && !isIdentStart(r) || !isIdentPart(r) {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Equal reports whether a and b are the same expression, ignoring positions
// and the spelling of identifiers (compared case-insensitively, as column
// names are). It is used to match GROUP BY expressions with select items.
func Equal(a, b Expr) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.(type) {
	case *Ident:
		y, ok := b.(*Ident)
		return ok && strings.EqualFold(x.Table, y.Table) && strings.EqualFold(x.Name, y.Name)
	case *Literal:
		y, ok := b.(*Literal)
		if !ok || x.Kind != y.Kind {
			return false
		}
		switch x.Kind {
		case LitInt, LitBool, LitDate, LitTimestamp:
			return x.Int == y.Int
		case LitFloat:
			// 1.5 and 1.5e0 differ: DuckDB types the first DECIMAL (FLOAT
			// next to a FLOAT), the second DOUBLE.
			sameKind := strings.ContainsAny(x.Text, "eE") == strings.ContainsAny(y.Text, "eE")
			return sameKind && (x.Float == y.Float || (x.Float != x.Float && y.Float != y.Float))
		case LitString:
			return x.Str == y.Str
		case LitInterval:
			return x.Int == y.Int && x.Unit == y.Unit
		}
		return true
	case *Unary:
		y, ok := b.(*Unary)
		return ok && x.Op == y.Op && Equal(x.X, y.X)
	case *Binary:
		y, ok := b.(*Binary)
		return ok && x.Op == y.Op && Equal(x.X, y.X) && Equal(x.Y, y.Y)
	case *Call:
		y, ok := b.(*Call)
		return ok && x.Name == y.Name && x.Distinct == y.Distinct && x.Star == y.Star && equalList(x.Args, y.Args)
	case *Case:
		y, ok := b.(*Case)
		if !ok || len(x.Whens) != len(y.Whens) || !Equal(x.Operand, y.Operand) || !Equal(x.Else, y.Else) {
			return false
		}
		for i := range x.Whens {
			if !Equal(x.Whens[i].Cond, y.Whens[i].Cond) || !Equal(x.Whens[i].Result, y.Whens[i].Result) {
				return false
			}
		}
		return true
	case *In:
		y, ok := b.(*In)
		return ok && x.Not == y.Not && Equal(x.X, y.X) && equalList(x.List, y.List)
	case *Like:
		y, ok := b.(*Like)
		return ok && x.Not == y.Not && x.ILike == y.ILike && Equal(x.X, y.X) && Equal(x.Pattern, y.Pattern)
	case *IsNull:
		y, ok := b.(*IsNull)
		return ok && x.Not == y.Not && Equal(x.X, y.X)
	case *Between:
		y, ok := b.(*Between)
		return ok && x.Not == y.Not && Equal(x.X, y.X) && Equal(x.Lo, y.Lo) && Equal(x.Hi, y.Hi)
	case *Extract:
		y, ok := b.(*Extract)
		return ok && x.Field == y.Field && Equal(x.X, y.X)
	case *Cast:
		y, ok := b.(*Cast)
		return ok && x.Type == y.Type && Equal(x.X, y.X)
	}
	return false
}

func equalList(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
