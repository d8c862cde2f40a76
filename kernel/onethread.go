package kernel

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"cachebook/engine/units"
	"cachebook/kernel/latency"
	"cachebook/kernel/param"
	"cachebook/kernel/sweep"
)

// This file holds the browser variants of cells: the kernel in the
// browser (Go WebAssembly: one thread, a bounded memory, no files) runs
// every lesson cell, as written or as a variant sized for it that says
// what the server would show. The runtime is recognised by its limits —
// Limits.Browser, which web/wasm sets — not by its build, so that the
// variants are tested natively. A server limited to one thread is not a
// browser: it runs SET threads = N cells on one thread too, and says so
// in its own words, but nothing else changes.

// browserWhy is the fact that makes a cell run differently in the browser.
const browserWhy = "Go WebAssembly in the browser runs on one thread"

// oneThread reports whether the runtime runs cells on one thread only,
// as the browser's kernel does (and a server limited to one thread).
func (l Limits) oneThread() bool { return l.Threads == 1 || l.Browser }

// limitError gives the errors of the runtime's explicit limits their
// names (see limitError), worded with the browser's facts in the browser:
// no server flag can raise its memory.
func (l Limits) limitError(err error) error {
	var me *param.MemoryError
	if l.Browser && errors.As(err, &me) {
		return &CellError{Ename: ErrMemoryLimit, Err: fmt.Errorf(
			"%s needs about %s of memory, more than the %s a cell may use in this browser (WebAssembly memory, beside the generated tables): choose smaller parameters, or run it on the server",
			me.What, units.HumanBytes(me.Need), units.HumanBytes(me.Limit))}
	}
	var te *param.ThreadsError
	if l.Browser && errors.As(err, &te) {
		return &CellError{Ename: ErrUnavailable, Err: fmt.Errorf("this needs %d threads and %s: run it on the server", te.Want, browserWhy)}
	}
	return limitError(err)
}

// maxShrink bounds the browser variants: a cell that needs more than
// maxShrink times the cell memory asked for far more than a lesson's size,
// and gets the memory error rather than a table a fraction of its ask.
const maxShrink = 4

// sweepVariant returns cell sized for the runtime's cell memory where its
// explicit rows and groups need more and the runtime is the browser: the
// largest row count, in steps of 500,000 rows (or halves below that), at
// which the sweep fits, with the group counts above it lowered to it —
// where the cell needs at most maxShrink times the cell memory.
// note says what changed and what the server runs ("" when nothing did).
func sweepVariant(cell Cell, lim Limits) (Cell, string, error) {
	if !lim.Browser || lim.CellMemory <= 0 {
		return cell, "", nil
	}
	v, err := parseCell(cell, sweep.Params())
	if err != nil {
		return cell, "", err
	}
	rows, groups, model := v.Int("rows"), v.Ints("groups"), v.Bool("model")
	need := sweep.Memory(rows, groups, model)
	if need <= lim.CellMemory || need > maxShrink*lim.CellMemory {
		return cell, "", nil // it fits, or it asks for far more than a tab: its error says so
	}
	capped := func(r int64) []int64 {
		out := make([]int64, 0, len(groups))
		for _, g := range groups {
			if g >= r {
				out = append(out, r)
				break
			}
			out = append(out, g)
		}
		return out
	}
	r := rows
	for r > 1000 && sweep.Memory(r, capped(r), model) > lim.CellMemory {
		if r > 1_000_000 {
			r = (r - 1) / 500_000 * 500_000
		} else {
			r /= 2
		}
	}
	if sweep.Memory(r, capped(r), model) > lim.CellMemory {
		return cell, "", nil // nothing fits: the cell's own error says so
	}
	out, err := paramsAsAttrs(cell)
	if err != nil {
		return cell, "", err
	}
	out.Attrs["rows"] = strconv.FormatInt(r, 10)
	gs := make([]string, 0, len(groups))
	for _, g := range capped(r) {
		gs = append(gs, strconv.FormatInt(g, 10))
	}
	out.Attrs["groups"] = strings.Join(gs, ",")
	note := fmt.Sprintf("browser-sized: rows=%d needs about %s, more than the %s a cell may use in this browser (WebAssembly memory), so this runs rows=%d groups=%s — the same comparison, the largest table a tab holds; the server runs the cell as written (see the reference run)",
		rows, units.HumanBytes(need), units.HumanBytes(lim.CellMemory), r, out.Attrs["groups"])
	return out, note, nil
}

// latencyVariant returns a latency cell that asks for the disk level
// (disk=true) without it where the runtime is the browser, whose page has
// no file to read around its caches, and a note saying so ("" when
// nothing changed): the curve stops at DRAM there, labelled, instead of
// failing.
func latencyVariant(cell Cell, lim Limits) (Cell, string, error) {
	if !lim.Browser {
		return cell, "", nil
	}
	v, err := parseCell(cell, latency.Params())
	if err != nil || !v.Bool("disk") {
		return cell, "", err
	}
	out, err := paramsAsAttrs(cell)
	if err != nil {
		return cell, "", err
	}
	out.Attrs["disk"] = "false"
	delete(out.Attrs, "disk_size")
	return out, "browser-sized: no disk level — a browser page has no file it can read around its caches, so this curve stops at DRAM; the server's curve goes on to the disk (see the reference run)", nil
}

// paramsAsAttrs returns cell with every parameter, from its source or its
// attributes, as an attribute and an empty source, for a variant to
// change: parameters left in the source would override the variant's.
func paramsAsAttrs(cell Cell) (Cell, error) {
	raw, _, err := cellParams(cell, false)
	if err != nil {
		return cell, err
	}
	out := cell
	out.Source = ""
	out.Attrs = make(map[string]string, len(cell.Attrs)+len(raw))
	for k, a := range cell.Attrs {
		out.Attrs[k] = a
	}
	for k, a := range raw {
		out.Attrs[k] = a
	}
	return out, nil
}

// setThreads matches SET threads = N (or worker_threads, = or TO, the
// value quoted or not) in an sql cell.
var setThreads = regexp.MustCompile(`(?i)\bSET\s+(?:worker_)?threads\s*(?:=|\bTO\b)\s*'?(\d+)'?`)

// oneThreadSQL returns cell with every SET threads = N above one, and a
// threads attribute above one, lowered to one thread where the runtime
// has one, and a note saying so ("" when nothing changed). The source
// keeps its length and lines, so that an error's position still points
// into the cell as written.
func oneThreadSQL(cell Cell, lim Limits) (Cell, string) {
	if !lim.oneThread() {
		return cell, ""
	}
	var asked []string
	src := []byte(cell.Source)
	for _, m := range setThreads.FindAllSubmatchIndex(src, -1) {
		n, err := strconv.Atoi(string(src[m[2]:m[3]]))
		if err != nil || n <= 1 {
			continue
		}
		asked = append(asked, string(src[m[2]:m[3]]))
		src[m[2]] = '1'
		for i := m[2] + 1; i < m[3]; i++ {
			src[i] = ' '
		}
	}
	out := cell
	out.Source = string(src)
	if a, ok := cell.Attrs["threads"]; ok {
		if n, err := strconv.Atoi(a); err == nil && n > 1 {
			asked = append(asked, a)
			out.Attrs = make(map[string]string, len(cell.Attrs))
			for k, v := range cell.Attrs {
				out.Attrs[k] = v
			}
			out.Attrs["threads"] = "1"
		}
	}
	if len(asked) == 0 {
		return cell, ""
	}
	if !lim.Browser {
		return out, fmt.Sprintf("on one thread: this cell sets threads = %s, and this server runs a cell on one thread, so it runs with threads = 1 — a parallel strategy then builds one table and merges nothing, so expect no speed-up here",
			strings.Join(asked, ", "))
	}
	return out, fmt.Sprintf("on one thread: this cell sets threads = %s, and %s, so it runs with threads = 1 — a parallel strategy then builds one table and merges nothing, so expect no speed-up here; the server runs %s threads (see the reference run)",
		strings.Join(asked, ", "), browserWhy, asked[len(asked)-1])
}
