package web

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxNameRunes is the longest display name kept; longer ones are cut.
const maxNameRunes = 40

// maxMarks bounds the combining marks kept on one letter (enough for any
// script's accents, not for a name that paints over its neighbours).
const maxMarks = 3

// cleanName normalises a learner's display name: NFC, without control,
// format (bidi overrides, zero-width) and private-use characters, runs of
// white space made one space, at most maxMarks combining marks on a
// letter, and cut to maxNameRunes. A name left empty, or one that reads
// as "Teacher" (or another of the reserved names) once look-alike letters
// are folded, is refused.
func cleanName(name string) (string, error) {
	name = norm.NFC.String(strings.ToValidUTF8(name, ""))
	var b strings.Builder
	space, marks, n := false, 0, 0
	for _, r := range name {
		switch {
		case unicode.IsSpace(r) || unicode.Is(unicode.Zs, r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r),
			unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r), r == utf8.RuneError:
			continue
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
			if marks >= maxMarks || b.Len() == 0 {
				continue
			}
			marks++
		default:
			marks = 0
		}
		if n >= maxNameRunes {
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
			n++
			if n >= maxNameRunes {
				break
			}
		}
		b.WriteRune(r)
		n++
	}
	out := strings.TrimSpace(b.String())
	if out == "" {
		return "", fmt.Errorf("%w: a display name is needed (letters, not only spaces or invisible characters)", errBadRequest)
	}
	if reservedName(out) {
		return "", fmt.Errorf("%w: %q is reserved; use your own name", errBadRequest, out)
	}
	return out, nil
}

// reservedContains and reservedEqual are the skeletons of the names a
// learner may not take: one that could pass for the teacher's on the
// class view or the projector.
var (
	reservedContains = []string{"teacher", "instructor", "lecturer"}
	reservedEqual    = []string{"admin", "administrator", "system", "server", "cachebook", "professor", "prof", "tutor", "moderator"}
)

func reservedName(name string) bool {
	sk := skeleton(name)
	for _, r := range reservedContains {
		if strings.Contains(sk, r) {
			return true
		}
	}
	for _, r := range reservedEqual {
		if sk == r {
			return true
		}
	}
	return false
}

// skeleton folds a name to the lower-case Latin letters it looks like:
// NFKC (full-width and mathematical letters become plain ones), accents
// dropped, Cyrillic and Greek look-alikes and digits that pass for
// letters mapped, everything else removed. "Τеасhеr", "T E A C H E R",
// "ｔｅａｃｈｅｒ" and "7eacher" all read "teacher".
func skeleton(name string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(name) {
		r = unicode.ToLower(r)
		if m, ok := confusables[r]; ok {
			r = m
		}
		if r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// confusables maps characters that look like a Latin letter to it (after
// lower-casing).
var confusables = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'з': 'e', 'һ': 'h', 'н': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k',
	'м': 'm', 'о': 'o', 'р': 'p', 'с': 'c', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w',
	'г': 'r', 'п': 'n', 'ч': 'y',
	// Greek
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't',
	'υ': 'u', 'χ': 'x', 'γ': 'y', 'ζ': 'z', 'μ': 'u',
	// Digits and signs that pass for letters
	'0': 'o', '1': 'l', '3': 'e', '4': 'a', '5': 's', '7': 't', '8': 'b', '@': 'a', '$': 's', '|': 'l', '!': 'i',
	'€': 'e',
}
