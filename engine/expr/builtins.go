package expr

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// Builtin describes one scalar function: its names, arity, argument and
// result types and implementation. Most functions are described by types
// alone: each argument is coerced to its declared type and Impl runs on the
// evaluated vectors (strict: a NULL argument gives NULL). Functions whose
// types depend on their arguments, or that take constant options, bind
// themselves with Bind instead.
type Builtin struct {
	Names   []string // the first is the canonical name
	MinArgs int
	MaxArgs int // math.MaxInt: variadic
	// Args are the argument types (the last repeats for variadic calls);
	// Result is the result type. Both are unused when Bind is set.
	Args   []vec.Type
	Result vec.Type
	Impl   func(args []*vec.Vector, n int) (*vec.Vector, error)
	// Bind, when set, binds the call itself (its arity is checked first).
	Bind func(fc *funcCall) (Expr, error)
	// Doc is one line for help listings.
	Doc string
}

// Builtins returns the table of scalar functions, in a stable order.
// The caller must not modify it.
func Builtins() []Builtin { return builtins }

// builtinIndex maps every name of every builtin to its entry.
var builtinIndex = sync.OnceValue(func() map[string]*Builtin {
	m := make(map[string]*Builtin)
	for i := range builtins {
		for _, n := range builtins[i].Names {
			m[n] = &builtins[i]
		}
	}
	return m
})

// LookupBuiltin returns the scalar function called name (lower case).
func LookupBuiltin(name string) (*Builtin, bool) {
	f, ok := builtinIndex()[name]
	return f, ok
}

var (
	str   = []vec.Type{vec.String}
	dates = []string{"year", "quarter", "month", "day", "hour", "minute", "second", "millisecond", "microsecond",
		"dayofweek", "isodow", "dayofyear", "dayofmonth", "week", "weekofyear", "decade", "century"}
)

var builtins = []Builtin{
	{Names: []string{"length", "char_length", "character_length", "len"}, MinArgs: 1, MaxArgs: 1,
		Args: str, Result: vec.Int64, Impl: lengthChars, Doc: "number of characters"},
	{Names: []string{"strlen", "octet_length"}, MinArgs: 1, MaxArgs: 1,
		Args: str, Result: vec.Int64, Impl: strlenBytes, Doc: "number of bytes"},
	{Names: []string{"lower", "lcase"}, MinArgs: 1, MaxArgs: 1,
		Args: str, Result: vec.String, Impl: changeCase(false), Doc: "lower case"},
	{Names: []string{"upper", "ucase"}, MinArgs: 1, MaxArgs: 1,
		Args: str, Result: vec.String, Impl: changeCase(true), Doc: "upper case"},
	{Names: []string{"substring", "substr"}, MinArgs: 2, MaxArgs: 3,
		Args: []vec.Type{vec.String, vec.Int64, vec.Int64}, Result: vec.String, Impl: substr,
		Doc: "substring(s, start[, length]), 1-based; a negative start counts from the end"},
	{Names: []string{"concat"}, MinArgs: 1, MaxArgs: math.MaxInt, Bind: bindConcat,
		Doc: "concatenation, skipping NULL arguments"},
	{Names: []string{"regexp_replace"}, MinArgs: 3, MaxArgs: 4, Bind: bindRegexpReplace,
		Doc: "regexp_replace(s, pattern, replacement[, options 'gisc']), constant pattern"},
	{Names: []string{"todatetime"}, MinArgs: 1, MaxArgs: 1, Bind: bindToDateTime,
		Doc: "ClickHouse's toDateTime: epoch seconds (or a date) to TIMESTAMP"},
	{Names: []string{"to_timestamp"}, MinArgs: 1, MaxArgs: 1,
		Args: []vec.Type{vec.Float64}, Result: vec.Timestamp, Impl: toTimestamp, Doc: "epoch seconds to TIMESTAMP"},
	{Names: []string{"epoch_ms"}, MinArgs: 1, MaxArgs: 1, Bind: bindEpochMs,
		Doc: "epoch milliseconds to TIMESTAMP, or a TIMESTAMP to epoch milliseconds"},
	{Names: []string{"epoch"}, MinArgs: 1, MaxArgs: 1, Bind: func(fc *funcCall) (Expr, error) {
		if err := fc.wantTemporal(0); err != nil {
			return nil, err
		}
		return bindDatePart(fc.c.Name, "epoch", fc.args[0], fc.c.At, fc.pos(0))
	}, Doc: "seconds since 1970-01-01"},
	{Names: []string{"make_date"}, MinArgs: 1, MaxArgs: 3, Bind: bindMakeDate,
		Doc: "make_date(days since 1970) or make_date(year, month, day)"},
	{Names: []string{"date_trunc", "datetrunc"}, MinArgs: 2, MaxArgs: 2, Bind: bindDateTrunc,
		Doc: "date_trunc('part', t): t rounded down to the part"},
	{Names: []string{"date_part", "datepart"}, MinArgs: 2, MaxArgs: 2, Bind: func(fc *funcCall) (Expr, error) {
		part, err := constString(fc.args[0], fc.c, 0)
		if err != nil {
			return nil, err
		}
		if err := fc.wantTemporal(1); err != nil {
			return nil, err
		}
		return bindDatePart(fc.c.Name, part, fc.args[1], fc.pos(0), fc.pos(1))
	}, Doc: "date_part('part', t), as extract(part FROM t)"},
	{Names: dates, MinArgs: 1, MaxArgs: 1, Bind: func(fc *funcCall) (Expr, error) {
		if err := fc.wantTemporal(0); err != nil {
			return nil, err
		}
		return bindDatePart(fc.c.Name, fc.c.Name, fc.args[0], fc.c.At, fc.pos(0))
	}, Doc: "one part of a DATE or TIMESTAMP, as extract"},
	{Names: []string{"abs"}, MinArgs: 1, MaxArgs: 1, Bind: func(fc *funcCall) (Expr, error) {
		if err := numericArg(fc.c, fc.args, 0); err != nil {
			return nil, err
		}
		return fc.strict(fc.args[0].Type(), absFn), nil
	}, Doc: "absolute value, in the argument's type"},
	{Names: []string{"round"}, MinArgs: 1, MaxArgs: 2, Bind: func(fc *funcCall) (Expr, error) {
		if err := numericArg(fc.c, fc.args, 0); err != nil {
			return nil, err
		}
		if len(fc.args) == 2 {
			if err := fc.want(1, vec.Int64); err != nil {
				return nil, err
			}
		}
		return fc.strict(fc.args[0].Type(), roundFn), nil
	}, Doc: "round(x[, digits]), half away from zero"},
	{Names: []string{"floor"}, MinArgs: 1, MaxArgs: 1, Bind: bindFloorCeil(true), Doc: "largest integer ≤ x, as DOUBLE (FLOAT for FLOAT)"},
	{Names: []string{"ceil", "ceiling"}, MinArgs: 1, MaxArgs: 1, Bind: bindFloorCeil(false), Doc: "smallest integer ≥ x, as DOUBLE (FLOAT for FLOAT)"},
	{Names: []string{"coalesce"}, MinArgs: 1, MaxArgs: math.MaxInt, Bind: bindCoalesce, Doc: "the first non-NULL argument"},
	{Names: []string{"ifnull"}, MinArgs: 2, MaxArgs: 2, Bind: bindCoalesce, Doc: "ifnull(a, b) = coalesce(a, b)"},
	{Names: []string{"nullif"}, MinArgs: 2, MaxArgs: 2, Bind: bindNullIf, Doc: "NULL when a = b, else a"},
	{Names: []string{"typeof"}, MinArgs: 1, MaxArgs: 1, Bind: func(fc *funcCall) (Expr, error) {
		t := fc.args[0].Type()
		if isUntyped(fc.args[0]) {
			t = vec.String
		}
		return NewConst(vec.String, t.String()), nil
	}, Doc: "the name of the argument's type, as DESCRIBE spells it"},
}

// funcCall is one call being bound: the AST, its bound arguments and the
// binder, for a Builtin's Bind.
type funcCall struct {
	c    *sql.Call
	args []Expr
	// rebind binds an argument's AST again (a field, not a method call on
	// the Binder, so that the table does not refer back to the binder
	// that looks it up).
	rebind func(sql.Expr) (Expr, error)
}

func (fc *funcCall) pos(i int) sql.Pos { return fc.c.Args[i].Pos() }

// want coerces argument i to t.
func (fc *funcCall) want(i int, t vec.Type) error {
	a := fc.args[i]
	if a.Type() == t {
		return nil
	}
	switch {
	case isUntyped(a) || a.Type() == vec.Null:
	case t == vec.String:
	case isNumber(t) && isNumber(a.Type()):
	case t == vec.Timestamp && (a.Type() == vec.Date || a.Type() == vec.TimestampNS):
	default:
		return errAt(fc.pos(i), "function %s expects %s for argument %d, got %s", fc.c.Name, t, i+1, a.Type())
	}
	x, err := coerce(a, t, fc.pos(i))
	if err != nil {
		return err
	}
	fc.args[i] = x
	return nil
}

// wantTemporal requires a DATE or TIMESTAMP argument i (coercing others
// to TIMESTAMP).
func (fc *funcCall) wantTemporal(i int) error {
	switch fc.args[i].Type() {
	case vec.Date, vec.Timestamp:
		return nil
	case vec.TimestampNS:
		fc.args[i] = &cast{x: fc.args[i], to: vec.Timestamp, pos: fc.pos(i)}
		return nil
	}
	return fc.want(i, vec.Timestamp)
}

// strict returns the call of do on the arguments, NULL when any is NULL.
func (fc *funcCall) strict(t vec.Type, do func([]*vec.Vector, int) (*vec.Vector, error)) Expr {
	return &fn{name: fc.c.Name, args: fc.args, t: t, strict: true, do: do, pos: fc.c.At}
}

func (b *Binder) bindCall(c *sql.Call, depth int) (Expr, error) {
	if sql.IsAggregate(c.Name) {
		return nil, errAt(c.At, "aggregate function %s is not allowed here", c.Name)
	}
	if c.Star {
		return nil, errAt(c.At, "%s(*) is not a function call; only count(*) takes *", c.Name)
	}
	f, ok := LookupBuiltin(c.Name)
	if !ok {
		return nil, errAt(c.At, "function %s is not supported", c.Name)
	}
	if c.Distinct {
		return nil, errAt(c.At, "DISTINCT is only allowed in aggregate functions, not in %s", c.Name)
	}
	args, err := b.bindList(c.Args, depth)
	if err != nil {
		return nil, err
	}
	if err := arity(c, f.MinArgs, f.MaxArgs); err != nil {
		return nil, err
	}
	fc := &funcCall{c: c, args: args, rebind: func(e sql.Expr) (Expr, error) { return b.bind(e, depth) }}
	if f.Bind != nil {
		return f.Bind(fc)
	}
	for i := range args {
		if err := fc.want(i, f.Args[min(i, len(f.Args)-1)]); err != nil {
			return nil, err
		}
	}
	return fc.strict(f.Result, f.Impl), nil
}

func bindConcat(fc *funcCall) (Expr, error) {
	for i := range fc.args {
		if err := fc.want(i, vec.String); err != nil {
			return nil, err
		}
	}
	return &fn{name: fc.c.Name, args: fc.args, t: vec.String, do: concatStrings, pos: fc.c.At}, nil
}

func bindRegexpReplace(fc *funcCall) (Expr, error) {
	c, args := fc.c, fc.args
	if err := fc.want(0, vec.String); err != nil {
		return nil, err
	}
	pat, err := constString(args[1], c, 1)
	if err != nil {
		return nil, err
	}
	repl, err := constString(args[2], c, 2)
	if err != nil {
		return nil, err
	}
	rr := &regexpReplacer{template: []byte(convertReplacement(repl))}
	extra := []string{sql.QuoteString(pat), sql.QuoteString(repl)}
	if len(args) == 4 {
		opts, err := constString(args[3], c, 3)
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			switch o {
			case 'g':
				rr.global = true
			case 'i':
				pat = "(?i)" + pat
			case 's':
				pat = "(?s)" + pat
			case 'c':
			default:
				return nil, errAt(fc.pos(3), "unknown regexp option %q", o)
			}
		}
		extra = append(extra, sql.QuoteString(opts))
	}
	if rr.re, err = regexp.Compile(pat); err != nil {
		return nil, errAt(fc.pos(1), "invalid regular expression: %v", err)
	}
	if !rr.global {
		rr.elideTail(pat)
		rr.compileFast(pat)
	}
	return &fn{name: c.Name, args: args[:1], t: vec.String, strict: true, do: rr.do, size: rr.size, extra: extra, pos: c.At}, nil
}

func bindToDateTime(fc *funcCall) (Expr, error) {
	switch fc.args[0].Type() {
	case vec.Timestamp:
		return fc.args[0], nil
	case vec.Date:
		return coerce(fc.args[0], vec.Timestamp, fc.pos(0))
	case vec.Float64, vec.Float32:
		return fc.strict(vec.Timestamp, toTimestamp), nil
	}
	if err := fc.want(0, vec.Int64); err != nil {
		return nil, err
	}
	return fc.strict(vec.Timestamp, scaleToTimestamp(microsPerSecond)), nil
}

func bindEpochMs(fc *funcCall) (Expr, error) {
	if t := fc.args[0].Type(); t == vec.Timestamp || t == vec.Date {
		if err := fc.want(0, vec.Timestamp); err != nil {
			return nil, err
		}
		return fc.strict(vec.Int64, divTimestamp(1000)), nil
	}
	if err := fc.want(0, vec.Int64); err != nil {
		return nil, err
	}
	return fc.strict(vec.Timestamp, scaleToTimestamp(1000)), nil
}

func bindMakeDate(fc *funcCall) (Expr, error) {
	if len(fc.args) == 2 {
		return nil, arity(fc.c, 1, 1)
	}
	for i := range fc.args {
		if err := fc.want(i, vec.Int64); err != nil {
			return nil, err
		}
	}
	return fc.strict(vec.Date, makeDate), nil
}

func bindDateTrunc(fc *funcCall) (Expr, error) {
	part, err := constString(fc.args[0], fc.c, 0)
	if err != nil {
		return nil, err
	}
	p, ok := dateParts[strings.ToLower(part)]
	if !ok || slices.Contains([]string{"dow", "isodow", "doy", "epoch"}, p) {
		return nil, errAt(fc.pos(0), "unsupported date_trunc part %q", part)
	}
	if err := fc.wantTemporal(1); err != nil {
		return nil, err
	}
	return &fn{name: fc.c.Name, args: fc.args[1:], t: vec.Timestamp, strict: true, extra: []string{sql.QuoteString(p)}, pos: fc.c.At,
		do: func(vs []*vec.Vector, n int) (*vec.Vector, error) { return truncUnit(p, vs[0], n) }}, nil
}

func bindFloorCeil(floor bool) func(fc *funcCall) (Expr, error) {
	return func(fc *funcCall) (Expr, error) {
		if err := numericArg(fc.c, fc.args, 0); err != nil {
			return nil, err
		}
		// DuckDB returns DOUBLE for integer arguments too, FLOAT for FLOAT.
		t := fc.args[0].Type()
		if t != vec.Float32 {
			t = vec.Float64
		}
		var err error
		if fc.args[0], err = coerce(fc.args[0], t, fc.pos(0)); err != nil {
			return nil, err
		}
		return fc.strict(t, floorCeil(floor)), nil
	}
}

func bindCoalesce(fc *funcCall) (Expr, error) {
	poss := make([]sql.Pos, len(fc.args))
	for i := range fc.args {
		poss[i] = fc.pos(i)
	}
	t, err := unify(fc.args, poss, fc.c.Name, fc.c.At)
	if err != nil {
		return nil, err
	}
	return &coalesce{args: fc.args, t: t}, nil
}

func bindNullIf(fc *funcCall) (Expr, error) {
	a := fc.args[0]
	eq, err := bindCompare(sql.OpEq, a, fc.args[1], fc.pos(0), fc.pos(1), fc.c.At)
	if err != nil {
		return nil, err
	}
	cmp, ok := eq.(*compare)
	if !ok { // NULL = NULL folded to a constant
		return a, nil
	}
	// The compare may have cast a; nullif returns a in its own type.
	a2, err := fc.rebind(fc.c.Args[0])
	if err != nil {
		return nil, err
	}
	if isUntyped(a2) {
		a2 = &Const{V: a2.(*Const).V}
	}
	return &nullIf{a: a2, eq: cmp}, nil
}
