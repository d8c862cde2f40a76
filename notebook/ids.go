package notebook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
)

// This file gives cells their ids and fingerprints them to tell edits.

// idPattern is the nbformat 4.5 cell id pattern; cachebook ids obey it too.
var idPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidID reports whether id may be used as a cell id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// fingerprint is a canonical encoding used to tell whether parsed content
// was changed.
func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "\x00unencodable"
	}
	return string(b)
}

func (c *Cell) fingerprint() string {
	return fingerprint(struct {
		Kind    CellKind
		Name    string
		Source  string
		Attrs   map[string]string
		Meta    map[string]any
		Outputs []Output
	}{c.Kind, c.Name, c.Source, c.Attrs, c.Meta, c.Outputs})
}

// AssignIDs gives every cell an ID: the "id" of its metadata if that is a
// valid id, else its current ID if valid, else one derived from its kind
// and a hash of its content. Duplicates get a numeric suffix. Parse calls
// it; call it again after adding cells.
func (n *Notebook) AssignIDs() {
	seen := map[string]bool{}
	for _, c := range n.Cells {
		id, _ := c.Meta["id"].(string)
		if !ValidID(id) {
			id = c.ID
		}
		if !ValidID(id) {
			id = c.derivedID()
		}
		base := id
		if len(base) > 56 {
			base = base[:56]
		}
		for k := 2; seen[id]; k++ {
			id = base + "-" + strconv.Itoa(k)
		}
		seen[id] = true
		c.ID = id
	}
}

// derivedID is the id of a cell without an explicit one: its kind and a
// hash of its content (for prose, without leading and trailing blank
// lines, which do not change what it says).
func (c *Cell) derivedID() string {
	src := c.Source
	if c.Kind == KindMarkdown {
		src = trimBlankLines(src)
	}
	h := sha256.Sum256([]byte(string(c.Kind) + "\x00" + c.Name + "\x00" + src))
	return string(c.Kind) + "-" + hex.EncodeToString(h[:4])
}
