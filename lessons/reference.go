package lessons

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"cachebook/notebook"
)

// This file holds the lessons' reference outputs: the outputs of one real
// run of every code cell (tables, curves, counters), saved in
// reference/NAME.json with the machine they came from, so that a reader
// without a server, or a browser that cannot measure what the server does,
// still sees the figures until their own run replaces them. `cachebook run
// LESSON --reference FILE` writes one (make reference writes them all).

// Reference is one lesson's reference run.
type Reference struct {
	Machine Machine `json:"machine"`
	// Cells maps CellKey of each code cell to its outputs.
	Cells map[string][]notebook.Output `json:"cells"`
}

// Machine describes where a reference run ran.
type Machine struct {
	CPU   string `json:"cpu"`
	Cores int    `json:"cores"`
	OS    string `json:"os"` // GOOS/GOARCH
	// Counters says whether hardware counters were measured ("measured")
	// or why not; Modelled says which figures are modelled, not measured.
	Counters string `json:"counters"`
	Modelled string `json:"modelled,omitempty"`
	Date     string `json:"date"` // YYYY-MM-DD, UTC
	Data     string `json:"data"` // the data set, e.g. "hits: 2,000,000 rows, shuffled"
}

// Label is the one-line description shown above a reference output.
func (m Machine) Label() string {
	s := fmt.Sprintf(notebook.ReferencePrefix+"%s (%d cores, %s), %s, on %s; counters: %s", m.CPU, m.Cores, m.OS, m.Date, m.Data, m.Counters)
	if m.Modelled != "" {
		s += "; " + m.Modelled
	}
	return s + ". Run the cell to replace it with this machine's own output."
}

// CellKey identifies a code cell's content: a hash of its kind,
// experiment name, attributes and source (not its id or metadata, which
// other tools may add), so that an edited cell no longer matches its
// reference output.
func CellKey(c *notebook.Cell) string {
	var b strings.Builder
	b.WriteString(string(c.Kind) + "\x00" + c.Name + "\x00")
	for _, k := range slices.Sorted(maps.Keys(c.Attrs)) {
		b.WriteString(k + "=" + c.Attrs[k] + "\x00")
	}
	b.WriteString(strings.TrimSpace(c.Source))
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:8])
}

// LoadReference returns the reference run of the lesson called name (see
// Source for the names), or nil when it has none.
func LoadReference(name string) (*Reference, error) {
	file, err := resolve(name)
	if err != nil {
		return nil, err
	}
	b, err := fs.ReadFile(files, "reference/"+strings.TrimSuffix(file, notebook.Ext)+".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lessons: %w", err)
	}
	var r Reference
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("lessons: reference of %s: %w", name, err)
	}
	return &r, nil
}

// Opened returns the lesson called name as a reader opens it: every code
// cell without outputs of its own shows its reference output, after a
// stream line with Machine.Label. Stale entries (no cell has their key)
// are ignored.
func Opened(name string) (*notebook.Notebook, error) {
	nb, err := Notebook(name)
	if err != nil {
		return nil, err
	}
	ref, err := LoadReference(name)
	if err != nil || ref == nil {
		return nb, err
	}
	ref.Apply(nb)
	return nb, nil
}

// Apply gives every code cell of nb that has no outputs its reference
// outputs, labelled, and returns how many cells it filled.
func (r *Reference) Apply(nb *notebook.Notebook) int {
	n := 0
	label := notebook.Output{Type: notebook.OutputStream, Name: "stdout", Text: r.Machine.Label() + "\n"}
	for _, c := range nb.Cells {
		if !c.Kind.IsCode() || len(c.Outputs) > 0 {
			continue
		}
		outs, ok := r.Cells[CellKey(c)]
		if !ok || len(outs) == 0 {
			continue
		}
		c.Outputs = append([]notebook.Output{label}, outs...)
		n++
	}
	return n
}

// Stale returns the keys of r that match no code cell of nb, and the ids
// of nb's code cells that r has no output for.
func (r *Reference) Stale(nb *notebook.Notebook) (stale, missing []string) {
	have := map[string]bool{}
	for _, c := range nb.Cells {
		if !c.Kind.IsCode() {
			continue
		}
		k := CellKey(c)
		have[k] = true
		if _, ok := r.Cells[k]; !ok {
			missing = append(missing, c.ID)
		}
	}
	for k := range r.Cells {
		if !have[k] {
			stale = append(stale, k)
		}
	}
	slices.Sort(stale)
	return stale, missing
}

// Encode writes r as compact JSON with one cell per line, so that a
// regenerated file's diff shows which cells changed.
func (r *Reference) Encode() ([]byte, error) {
	var b strings.Builder
	m, err := json.Marshal(r.Machine)
	if err != nil {
		return nil, fmt.Errorf("lessons: reference: %w", err)
	}
	b.WriteString("{\"machine\": " + string(m) + ",\n\"cells\": {")
	for i, k := range slices.Sorted(maps.Keys(r.Cells)) {
		o, err := json.Marshal(r.Cells[k])
		if err != nil {
			return nil, fmt.Errorf("lessons: reference: cell %s: %w", k, err)
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n%q: %s", k, o)
	}
	b.WriteString("\n}}\n")
	return []byte(b.String()), nil
}

// MaxRows and MaxText bound what a reference output keeps.
const (
	MaxRows = 20
	MaxText = 4000
)

// dropped are output forms a reference does not keep: the UI draws from
// cachebook's own JSON, so the HTML and image forms would only repeat it.
var dropped = []string{"image/svg+xml", "image/png", "application/vnd.vegalite.v5+json", "application/vnd.vegalite.v4+json"}

// NewReference takes the outputs of the code cells of nb, which has just
// run on m, keeping them small: result tables cut to MaxRows rows, text
// to MaxText bytes, no HTML or image forms beside cachebook's JSON, and
// counters without their per-phase reports, event list or second copy.
func NewReference(nb *notebook.Notebook, m Machine) (*Reference, error) {
	r := &Reference{Machine: m, Cells: map[string][]notebook.Output{}}
	for _, c := range nb.Cells {
		if !c.Kind.IsCode() || len(c.Outputs) == 0 {
			continue
		}
		var outs []notebook.Output
		for i, o := range c.Outputs {
			if o.Type == notebook.OutputDisplay && replaced(o, c.Outputs[i+1:]) {
				continue // a live display the final result repeats
			}
			t, err := trim(o)
			if err != nil {
				return nil, fmt.Errorf("lessons: cell %s: %w", c.ID, err)
			}
			outs = append(outs, t)
		}
		dropBundleCounters(outs)
		r.Cells[CellKey(c)] = outs
	}
	return r, nil
}

// counters is the MIME type of a counters display (package kernel).
const counters = "application/vnd.cachebook.counters+json"

// dropBundleCounters removes the copy of the counters a result bundle
// carries when the cell also has them as a display of their own.
func dropBundleCounters(outs []notebook.Output) {
	has := slices.ContainsFunc(outs, func(o notebook.Output) bool { return o.Data[counters] != nil })
	if !has {
		return
	}
	for _, o := range outs {
		for k, v := range o.Data {
			if b, ok := v.(map[string]any); ok && k != counters {
				delete(b, "counters")
			}
		}
	}
}

// replaced reports whether a later output carries a form of the same
// MIME type as the display o (a measurement's live curve, then its result).
func replaced(o notebook.Output, later []notebook.Output) bool {
	for k := range o.Data {
		for _, l := range later {
			if _, ok := l.Data[k]; ok {
				return true
			}
		}
	}
	return false
}

func trim(o notebook.Output) (notebook.Output, error) {
	if len(o.Text) > MaxText {
		o.Text = o.Text[:MaxText] + "\n… (cut in the reference output)"
	}
	if len(o.Data) == 0 {
		return o, nil
	}
	// A JSON round trip turns typed values into maps, which can be cut.
	b, err := json.Marshal(o.Data)
	if err != nil {
		return o, err
	}
	var data map[string]any
	if err := json.Unmarshal(b, &data); err != nil {
		return o, err
	}
	for _, k := range dropped {
		delete(data, k)
	}
	own := false
	for k, v := range data {
		if !strings.HasPrefix(k, "application/vnd.cachebook.") {
			continue
		}
		own = true
		if m, ok := v.(map[string]any); ok && k == counters {
			// The panel shows totals and workers; per-phase reports and
			// the probe's event list only repeat them.
			delete(m, "phases")
			if a, ok := m["availability"].(map[string]any); ok {
				delete(a, "events")
			}
		}
		if bundle, ok := v.(map[string]any); ok {
			if sts, ok := bundle["statements"].([]any); ok {
				for _, st := range sts {
					if st, ok := st.(map[string]any); ok {
						if rows, ok := st["rows"].([]any); ok && len(rows) > MaxRows {
							st["rows"], st["truncated"] = rows[:MaxRows], true
						}
					}
				}
			}
		}
	}
	if own {
		o.HTML = ""
	}
	o.Data = data
	if len(data) == 0 {
		o.Data = nil
	}
	return o, nil
}
