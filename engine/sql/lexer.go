package sql

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TokenKind classifies a token.
type TokenKind uint8

// Token kinds. Keywords are lexed as TokIdent; the parser recognises them by
// their case-insensitive spelling.
const (
	TokEOF        TokenKind = iota
	TokIllegal              // a character or construct the lexer rejects
	TokIdent                // name or keyword
	TokQIdent               // "quoted identifier"; Value holds the unquoted name
	TokInt                  // 123
	TokFloat                // 1.5, .5, 1e3
	TokString               // 'text'; Value holds the unescaped text
	TokEq                   // =
	TokNe                   // <> or !=
	TokLt                   // <
	TokLe                   // <=
	TokGt                   // >
	TokGe                   // >=
	TokPlus                 // +
	TokMinus                // -
	TokStar                 // *
	TokSlash                // /
	TokSlashSlash           // //
	TokPercent              // %
	TokConcat               // ||
	TokLParen               // (
	TokRParen               // )
	TokComma                // ,
	TokDot                  // .
	TokSemi                 // ;
	TokDColon               // ::
)

var tokenNames = [...]string{
	TokEOF: "end of input", TokIllegal: "illegal token", TokIdent: "identifier", TokQIdent: "identifier",
	TokInt: "integer", TokFloat: "number", TokString: "string", TokEq: "'='", TokNe: "'<>'", TokLt: "'<'",
	TokLe: "'<='", TokGt: "'>'", TokGe: "'>='", TokPlus: "'+'", TokMinus: "'-'", TokStar: "'*'",
	TokSlash: "'/'", TokSlashSlash: "'//'", TokPercent: "'%'", TokConcat: "'||'", TokLParen: "'('",
	TokRParen: "')'", TokComma: "','", TokDot: "'.'", TokSemi: "';'", TokDColon: "'::'",
}

// String names the token kind for error messages.
func (k TokenKind) String() string {
	if int(k) < len(tokenNames) {
		return tokenNames[k]
	}
	return fmt.Sprintf("TokenKind(%d)", k)
}

// Token is one lexical token of SQL text.
type Token struct {
	Kind  TokenKind
	Pos   Pos    // position of the first byte
	End   int    // byte offset just past the token
	Text  string // the source text of the token
	Value string // identifier name (unquoted) or unescaped string value
}

// describe renders the token for "found X" in error messages.
func (t Token) describe() string {
	switch t.Kind {
	case TokEOF:
		return "end of input"
	case TokString:
		s := t.Text
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return "string " + s
	}
	s := t.Text
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	if t.Kind == TokIdent && isKeyword(t.Text) {
		s = strings.ToUpper(s)
	}
	return "'" + s + "'"
}

// Tokenize splits src into tokens, skipping whitespace and comments. The
// last token is TokEOF. On a lexical error it returns the tokens read so far
// and an *Error at the offending position.
func Tokenize(src string) ([]Token, error) { return tokenize(context.Background(), src, 0, nil) }

// checkEvery is how many tokens the lexer and parser handle between looks
// at their context.
const checkEvery = 4096

// tokenize splits src into tokens, ending with TokEOF. With maxTokens > 0,
// input of more tokens is refused at the first one past the bound, with an
// *Error wrapping cause.
func tokenize(ctx context.Context, src string, maxTokens int, cause error) ([]Token, error) {
	if len(src) > MaxSourceBytes {
		l := lexer{src: src[:MaxSourceBytes], pos: Pos{Line: 1, Col: 1}}
		for l.pos.Offset < MaxSourceBytes {
			l.advance()
		}
		return nil, &Error{Pos: l.pos, Msg: fmt.Sprintf("input too long: %d bytes, at most %d bytes of SQL are accepted at once", len(src), MaxSourceBytes)}
	}
	l := lexer{src: src, pos: Pos{Offset: 0, Line: 1, Col: 1}}
	var toks []Token
	depth := 0
	for {
		t, err := l.next()
		if err != nil {
			return toks, err
		}
		if len(toks)%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("parsing: %w", err)
			}
		}
		if maxTokens > 0 && len(toks) == maxTokens && t.Kind != TokEOF {
			return nil, &Error{Pos: t.Pos, Err: cause, Msg: fmt.Sprintf(
				"SQL too large to parse within the memory limit: more than %d tokens, at up to %d bytes each while parsing (the limit is %d bytes; raise it with SET memory_limit or split the cell)",
				maxTokens, ParseBytesPerToken, int64(maxTokens)*ParseBytesPerToken)}
		}
		switch t.Kind {
		case TokLParen:
			// Reject deep nesting here, before millions of tokens are
			// kept: the parser would refuse it anyway.
			if depth++; depth > MaxDepth {
				return nil, &Error{Pos: t.Pos, Msg: fmt.Sprintf("parentheses nested too deeply (more than %d levels)", MaxDepth)}
			}
		case TokRParen:
			depth--
		}
		toks = append(toks, t)
		if t.Kind == TokEOF {
			return toks, nil
		}
	}
}

// MaxSourceBytes bounds the SQL text Parse accepts (1 MiB), so that what
// the parser builds stays bounded too: a notebook cell is written by hand.
const MaxSourceBytes = 1 << 20

// ParseBytesPerToken bounds what the parser allocates per token of input,
// tokens and syntax tree together: measured at 520-980 bytes over long
// select lists, IN lists, many statements and deep nesting.
const ParseBytesPerToken = 1024

// MaxStatements bounds the statements one Parse call returns.
const MaxStatements = 10000

type lexer struct {
	src string
	pos Pos
}

// advance moves past the rune at the current offset.
func (l *lexer) advance() {
	if l.pos.Offset >= len(l.src) {
		return
	}
	r, n := utf8.DecodeRuneInString(l.src[l.pos.Offset:])
	l.pos.Offset += n
	if r == '\n' {
		l.pos.Line++
		l.pos.Col = 1
	} else {
		l.pos.Col++
	}
}

func (l *lexer) peekByte(k int) byte {
	if l.pos.Offset+k < len(l.src) {
		return l.src[l.pos.Offset+k]
	}
	return 0
}

func (l *lexer) errorf(p Pos, format string, args ...any) error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// skipSpace skips whitespace and comments.
func (l *lexer) skipSpace() error {
	for l.pos.Offset < len(l.src) {
		c := l.src[l.pos.Offset]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.advance()
		case c == '-' && l.peekByte(1) == '-':
			for l.pos.Offset < len(l.src) && l.src[l.pos.Offset] != '\n' {
				l.advance()
			}
		case c == '/' && l.peekByte(1) == '*':
			start := l.pos
			l.advance()
			l.advance()
			for {
				if l.pos.Offset >= len(l.src) {
					return l.errorf(start, "unterminated comment")
				}
				if l.src[l.pos.Offset] == '*' && l.peekByte(1) == '/' {
					l.advance()
					l.advance()
					break
				}
				l.advance()
			}
		default:
			if c >= utf8.RuneSelf {
				r, _ := utf8.DecodeRuneInString(l.src[l.pos.Offset:])
				if unicode.IsSpace(r) {
					l.advance()
					continue
				}
			}
			return nil
		}
	}
	return nil
}

func isIdentStart(r rune) bool {
	return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || (r >= utf8.RuneSelf && unicode.IsLetter(r))
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || ('0' <= r && r <= '9') || r == '$' || (r >= utf8.RuneSelf && unicode.IsDigit(r))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (l *lexer) next() (Token, error) {
	if err := l.skipSpace(); err != nil {
		return Token{Kind: TokIllegal, Pos: l.pos, End: l.pos.Offset}, err
	}
	start := l.pos
	tok := func(k TokenKind) Token {
		return Token{Kind: k, Pos: start, End: l.pos.Offset, Text: l.src[start.Offset:l.pos.Offset]}
	}
	if l.pos.Offset >= len(l.src) {
		return tok(TokEOF), nil
	}
	c := l.src[l.pos.Offset]
	r, _ := utf8.DecodeRuneInString(l.src[l.pos.Offset:])
	switch {
	case isIdentStart(r):
		for l.pos.Offset < len(l.src) {
			r, _ := utf8.DecodeRuneInString(l.src[l.pos.Offset:])
			if !isIdentPart(r) {
				break
			}
			l.advance()
		}
		t := tok(TokIdent)
		t.Value = t.Text
		return t, nil
	case isDigit(c) || (c == '.' && isDigit(l.peekByte(1))):
		return l.number(start)
	case c == '\'':
		s, err := l.quoted('\'', "string")
		t := tok(TokString)
		t.Value = s
		if err != nil {
			t.Kind = TokIllegal
		}
		return t, err
	case c == '"':
		s, err := l.quoted('"', "quoted identifier")
		t := tok(TokQIdent)
		t.Value = s
		if err != nil {
			t.Kind = TokIllegal
			return t, err
		}
		if s == "" {
			return t, l.errorf(start, "zero-length quoted identifier")
		}
		return t, nil
	}
	two := ""
	if l.pos.Offset+2 <= len(l.src) {
		two = l.src[l.pos.Offset : l.pos.Offset+2]
	}
	var k TokenKind
	switch two {
	case "<>", "!=":
		k = TokNe
	case "==":
		k = TokEq
	case "<=":
		k = TokLe
	case ">=":
		k = TokGe
	case "//":
		k = TokSlashSlash
	case "||":
		k = TokConcat
	case "::":
		k = TokDColon
	}
	if k != 0 {
		l.advance()
		l.advance()
		return tok(k), nil
	}
	switch c {
	case '=':
		k = TokEq
	case '<':
		k = TokLt
	case '>':
		k = TokGt
	case '+':
		k = TokPlus
	case '-':
		k = TokMinus
	case '*':
		k = TokStar
	case '/':
		k = TokSlash
	case '%':
		k = TokPercent
	case '(':
		k = TokLParen
	case ')':
		k = TokRParen
	case ',':
		k = TokComma
	case '.':
		k = TokDot
	case ';':
		k = TokSemi
	}
	l.advance()
	if k == 0 {
		t := tok(TokIllegal)
		switch r {
		case '[', ']':
			return t, l.errorf(start, "lists ([…] literals and subscripts) are not supported")
		case '{', '}':
			return t, l.errorf(start, "structs ({…} literals) are not supported")
		case ':':
			if strings.HasPrefix(l.src[l.pos.Offset:], "=") {
				return t, l.errorf(start, "named parameters (name := value) are not supported")
			}
			return t, l.errorf(start, "slices and ':' are not supported")
		}
		return t, l.errorf(start, "unexpected character %q", r)
	}
	return tok(k), nil
}

// number lexes digits [. digits] [e [+-] digits], or . digits [...].
func (l *lexer) number(start Pos) (Token, error) {
	kind := TokInt
	for isDigit(l.peekByte(0)) {
		l.advance()
	}
	if l.peekByte(0) == '.' && l.peekByte(1) != '.' {
		kind = TokFloat
		l.advance()
		for isDigit(l.peekByte(0)) {
			l.advance()
		}
	}
	if c := l.peekByte(0); c == 'e' || c == 'E' {
		d := l.peekByte(1)
		if isDigit(d) || ((d == '+' || d == '-') && isDigit(l.peekByte(2))) {
			kind = TokFloat
			l.advance()
			if d == '+' || d == '-' {
				l.advance()
			}
			for isDigit(l.peekByte(0)) {
				l.advance()
			}
		}
	}
	t := Token{Kind: kind, Pos: start, End: l.pos.Offset, Text: l.src[start.Offset:l.pos.Offset]}
	// A number immediately followed by a letter (12abc) is an error.
	if l.pos.Offset < len(l.src) {
		r, _ := utf8.DecodeRuneInString(l.src[l.pos.Offset:])
		if isIdentStart(r) {
			p := l.pos
			l.advance()
			t.Kind = TokIllegal
			return t, l.errorf(p, "invalid character %q after number %s", r, t.Text)
		}
	}
	return t, nil
}

// quoted lexes a q-quoted string where qq stands for q.
func (l *lexer) quoted(q byte, what string) (string, error) {
	start := l.pos
	l.advance()
	var b strings.Builder
	seg := l.pos.Offset
	for {
		if l.pos.Offset >= len(l.src) {
			return b.String(), l.errorf(start, "unterminated %s", what)
		}
		if l.src[l.pos.Offset] == q {
			b.WriteString(l.src[seg:l.pos.Offset])
			l.advance()
			if l.peekByte(0) == q {
				b.WriteByte(q)
				l.advance()
				seg = l.pos.Offset
				continue
			}
			return b.String(), nil
		}
		l.advance()
	}
}

// keywords are the reserved words: they cannot be used as bare column
// names or aliases (quote them to do so).
var keywords = map[string]bool{
	"ALL": true, "AND": true, "AS": true, "ASC": true, "BETWEEN": true, "BY": true, "CASE": true,
	"CAST": true, "DESC": true, "DISTINCT": true, "ELSE": true, "END": true,
	"EXCEPT": true, "EXISTS": true, "FALSE": true, "FROM": true, "GROUP": true,
	"HAVING": true, "ILIKE": true, "IN": true, "INTERSECT": true, "IS": true,
	"JOIN": true, "LIKE": true, "LIMIT": true, "NOT": true, "NULL": true,
	"NULLS": true, "OFFSET": true, "ON": true, "OR": true, "ORDER": true,
	"SELECT": true, "THEN": true, "TRUE": true, "UNION": true, "USING": true,
	"WHEN": true, "WHERE": true, "WINDOW": true, "WITH": true,
}

func isKeyword(s string) bool {
	if len(s) > 9 {
		return false
	}
	return keywords[strings.ToUpper(s)]
}

// joinWords cannot be bare table aliases, so that an unsupported join is
// reported as such rather than misread as an alias.
var joinWords = map[string]bool{
	"LEFT": true, "RIGHT": true, "FULL": true, "INNER": true, "CROSS": true, "OUTER": true,
	"NATURAL": true, "SEMI": true, "ANTI": true, "POSITIONAL": true, "ASOF": true,
}
