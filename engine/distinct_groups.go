package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cachebook/engine/agg"
	"cachebook/engine/expr"
	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// groupedDistinctArg returns x when the query is a GROUP BY with keys whose
// DISTINCT aggregates (count, sum or avg DISTINCT) all take the one
// argument x, and whose other aggregates can be computed in two steps:
// count(*), count, min, max, and sum or avg of an input narrower than 64
// bits (a partial sum of BIGINTs could pass BIGINT where the whole does
// not, or avg's 128-bit sum would).
func groupedDistinctArg(q *query) (expr.Expr, bool) {
	if len(q.keys) == 0 || len(q.aggCalls) != len(q.specs) {
		return nil, false
	}
	for _, k := range q.keys {
		if k.Type() == vec.Null {
			return nil, false
		}
	}
	var x expr.Expr
	var xAST sql.Expr
	for i, sp := range q.specs {
		switch {
		case sp.Kind == agg.CountDistinct || sp.Distinct:
			a := q.args[i]
			c := q.aggCalls[i]
			if a == nil || a.Type() == vec.Null || len(c.Args) != 1 {
				return nil, false
			}
			if x == nil {
				x, xAST = a, c.Args[0]
			} else if !sql.Equal(xAST, c.Args[0]) || a.Type() != x.Type() {
				return nil, false
			}
		case sp.Kind == agg.Sum || sp.Kind == agg.Avg:
			if sp.In == vec.Int64 || sp.In == vec.UInt64 {
				return nil, false
			}
		case sp.Kind == agg.CountStar || sp.Kind == agg.Count || sp.Kind == agg.Min || sp.Kind == agg.Max:
		default:
			return nil, false
		}
	}
	return x, x != nil
}

// groupedDistinct builds the aggregation of a GROUP BY K whose DISTINCT
// aggregates take x (see groupedDistinctArg) as two GROUP BYs: the inner
// one groups the input by (K, x) and computes the other aggregates'
// partials per group; the outer one groups those groups by K, counting
// (summing, averaging) their non-NULL x for the DISTINCT aggregates and
// combining the partials for the others (a count is the sum of the
// partial counts, a sum the sum of the partial sums, a min the min of the
// mins, an avg the sum of the sums over the sum of the counts). The
// distinct (K, x) pairs go through the GROUP BY the settings choose
// (radix or parallel with cache-sized partitions, spilling under the
// memory limit) rather than one by one into a per-aggregate set of
// (group, value) pairs. NULL x forms groups of its own in the inner
// GROUP BY, whose rows the other aggregates count, and which the DISTINCT
// ones skip, as they skip NULLs.
//
// It returns the inner GROUP BY, which reads child, and the operator that
// hands on the groups: the outer GROUP BY, or a projection above it that
// computes the averages. Its output is the keys, then one column per
// aggregate of q, as the single GROUP BY's.
func (s *Session) groupedDistinct(q *query, x expr.Expr, child operator, hint int64) (*hashAggOp, operator, error) {
	keys, keyNames, keyNotes := q.keys, q.keyNames, q.keyNotes
	var dense *denseKeyOp
	if s.denseKeys(q) {
		// The GROUP BYs group dense ids of the keys and x, which
		// denseKeyOp hands on; denseAttachOp puts the keys back.
		dense = &denseKeyOp{opBase: opBase{label: "DENSE_KEYS", children: []operator{child}},
			keys: q.keys, keyNames: q.keyNames, x: x, max: cmp.Or(s.maxDenseIDs, maxDenseIDs)}
		child = dense
		name := "id(" + strings.Join(q.keyNames, ", ") + ")"
		keys = []expr.Expr{&expr.ColumnRef{Index: 0, T: vec.Int32, Name: name}}
		keyNames, keyNotes = []string{name}, nil
		x = &expr.ColumnRef{Index: 1, T: x.Type(), Name: x.String()}
	}
	nk := len(keys)
	innerKeys := append(slices.Clip(keys), x)
	innerKeyNames := append(slices.Clip(keyNames), x.String())
	var innerArgs []expr.Expr
	var innerSpecs []agg.Spec
	var innerNames []string
	// partial adds an aggregate to the inner GROUP BY and returns the
	// reference to its column there.
	partial := func(sp agg.Spec, arg expr.Expr, name string) expr.Expr {
		innerArgs = append(innerArgs, arg)
		innerSpecs = append(innerSpecs, sp)
		innerNames = append(innerNames, name)
		return &expr.ColumnRef{Index: nk + len(innerSpecs), T: sp.OutType(), Name: name}
	}
	xcol := &expr.ColumnRef{Index: nk, T: x.Type(), Name: x.String()}

	var outerArgs []expr.Expr
	var outerSpecs []agg.Spec
	var outerNames []string
	outer := func(sp agg.Spec, arg expr.Expr, name string) {
		outerArgs = append(outerArgs, arg)
		outerSpecs = append(outerSpecs, sp)
		outerNames = append(outerNames, name)
	}
	var avgs []avgCols
	var avgCounts []expr.Expr
	var distinctNames, combinedNames []string
	for i, sp := range q.specs {
		name, arg := q.aggNames[i], q.args[i]
		argName := ""
		if arg != nil {
			argName = arg.String()
		}
		switch {
		case sp.Kind == agg.CountDistinct:
			outer(agg.Spec{Kind: agg.Count, In: x.Type()}, xcol, name)
			distinctNames = append(distinctNames, name)
			continue
		case sp.Distinct:
			outer(agg.Spec{Kind: sp.Kind, In: x.Type()}, xcol, name)
			distinctNames = append(distinctNames, name)
			continue
		case sp.Kind == agg.CountStar:
			c := partial(agg.Spec{Kind: agg.CountStar}, nil, "count(*)")
			outer(agg.Spec{Kind: agg.Sum, In: vec.Int64}, c, name)
		case sp.Kind == agg.Count:
			c := partial(sp, arg, name)
			outer(agg.Spec{Kind: agg.Sum, In: vec.Int64}, c, name)
		case sp.Kind == agg.Sum:
			p := partial(sp, arg, name)
			outer(agg.Spec{Kind: agg.Sum, In: sp.OutType()}, p, name)
		case sp.Kind == agg.Min || sp.Kind == agg.Max:
			p := partial(sp, arg, name)
			outer(agg.Spec{Kind: sp.Kind, In: sp.OutType()}, p, name)
		case sp.Kind == agg.Avg:
			sum := agg.Spec{Kind: agg.Sum, In: sp.In}
			p := partial(sum, arg, "sum("+argName+")")
			c := partial(agg.Spec{Kind: agg.Count, In: sp.In}, arg, "count("+argName+")")
			avgs = append(avgs, avgCols{agg: i, sum: nk + len(outerSpecs)})
			avgCounts = append(avgCounts, c)
			outer(agg.Spec{Kind: agg.Sum, In: sum.OutType()}, p, name+": sum")
		default:
			return nil, nil, fmt.Errorf("internal error: %s in a two-step DISTINCT aggregation", sp.Kind)
		}
		combinedNames = append(combinedNames, name)
	}
	for j, c := range avgCounts {
		avgs[j].count = nk + len(outerSpecs)
		outer(agg.Spec{Kind: agg.Sum, In: vec.Int64}, c, q.aggNames[avgs[j].agg]+": count")
	}

	inner := &hashAggOp{opBase: opBase{label: "HASH_GROUP_BY", children: []operator{child}},
		keys: innerKeys, keyNames: innerKeyNames, args: innerArgs, specs: innerSpecs, aggNames: innerNames,
		rowsHint: hint, settings: s.settings, cache: s.db.cache,
		serial: q.rel.scan == nil}
	inner.notes = []string{fmt.Sprintf("groups: the distinct (%s) pairs of %s, for the GROUP BY above",
		strings.Join(innerKeyNames, ", "), strings.Join(distinctNames, ", "))}

	if dense != nil && len(innerSpecs) > 0 {
		return nil, nil, errors.New("internal error: dense ids with other aggregates than DISTINCT ones")
	}
	outerKeys := make([]expr.Expr, nk)
	for i, k := range keys {
		outerKeys[i] = &expr.ColumnRef{Index: i, T: k.Type(), Name: keyNames[i]}
	}
	// The outer GROUP BY reads the inner one's groups on one goroutine:
	// an aggregation hands its parts to one consumer.
	st := s.settings
	st.Threads = 1
	keyList := strings.Join(keyNames, ", ")
	if nk > 1 {
		keyList = "(" + keyList + ")"
	}
	note := fmt.Sprintf("%s: the distinct (%s) pairs grouped first, then counted per %s",
		strings.Join(distinctNames, ", "), strings.Join(innerKeyNames, ", "), keyList)
	notes := []string{note}
	if len(combinedNames) > 0 {
		notes = append(notes, fmt.Sprintf("%s: computed per (%s) pair, then combined per %s",
			strings.Join(combinedNames, ", "), strings.Join(innerKeyNames, ", "), keyList))
	}
	outerOp := &hashAggOp{opBase: opBase{label: "HASH_GROUP_BY", children: []operator{inner}},
		keys: outerKeys, keyNames: keyNames, keyNotes: keyNotes, args: outerArgs, specs: outerSpecs, aggNames: outerNames,
		rewritten: q.rewritten, rowsHint: -1, serial: true, settings: st, cache: s.db.cache, notes: notes}
	var top operator = outerOp
	if len(avgs) > 0 {
		var err error
		if top, err = averages(outerOp, keys, keyNames, q, outerSpecs, avgs); err != nil {
			return nil, nil, err
		}
	}
	if dense != nil {
		top = &denseAttachOp{opBase: opBase{label: "DENSE_KEYS_ATTACH", children: []operator{top}}, dense: dense}
	}
	return inner, top, nil
}

// averages returns the projection above the outer GROUP BY of a two-step
// DISTINCT aggregation (groupedDistinct) that computes q's averages.
func averages(outerOp operator, keys []expr.Expr, keyNames []string, q *query, outerSpecs []agg.Spec, avgs []avgCols) (operator, error) {
	nk := len(keys)

	// The averages: the sum of the sums over the sum of the counts,
	// as avg divides its sum by its count.
	cols := make([]vec.Column, nk+len(outerSpecs))
	for i, k := range keys {
		cols[i] = vec.Column{Name: fmt.Sprintf("c%d", i), Type: k.Type()}
	}
	for j, sp := range outerSpecs {
		cols[nk+j] = vec.Column{Name: fmt.Sprintf("c%d", nk+j), Type: sp.OutType()}
	}
	exprs := make([]expr.Expr, nk+len(q.specs))
	names := make([]string, nk+len(q.specs))
	copy(names, keyNames)
	copy(names[nk:], q.aggNames)
	for i := range exprs {
		exprs[i] = &expr.ColumnRef{Index: i, T: cols[i].Type, Name: names[i]}
	}
	b := &expr.Binder{Columns: cols}
	for _, a := range avgs {
		e, err := sql.ParseExpr(fmt.Sprintf("CAST(c%d AS DOUBLE) / c%d", a.sum, a.count))
		if err != nil {
			return nil, fmt.Errorf("internal error: %w", err)
		}
		d, err := b.Bind(e)
		if err != nil {
			return nil, fmt.Errorf("internal error: %w", err)
		}
		exprs[nk+a.agg] = d
		names[nk+a.agg] += ": the sum of the partial sums / the sum of the partial counts"
	}
	return &projectOp{opBase: opBase{label: "PROJECTION", children: []operator{outerOp}}, exprs: exprs, names: names}, nil
}

// twoStepDistinct builds the aggregation of q as groupedDistinct does,
// where it applies and pays (twoStepPays); ok is false otherwise, and the
// single GROUP BY runs.
func (s *Session) twoStepDistinct(q *query, child operator, hint int64) (inner *hashAggOp, top operator, ok bool) {
	x, combinable := groupedDistinctArg(q)
	splittable := splitsDistinct(q)
	if !combinable && !splittable {
		return nil, nil, false
	}
	if s.settings.GroupBy == "naive" && !s.forceTwoStep && !s.forceSplit {
		// A naive GROUP BY cannot spill: the two steps' first would hold
		// the same pairs in a table less compact than the sets.
		return nil, nil, false
	}
	rows := q.rel.rows
	if q.where != nil && rows > 0 {
		// What passes the filter is not known before the scan: half the
		// table, a guess between the filter that keeps every row (whose
		// sets the guess may let pass the limit, as before the two steps
		// existed) and the selective ones of ClickBench's Q10, Q11 and
		// Q13 (a tenth of the rows or less), whose sets fit and which
		// the two steps slowed by 10 to 15 % at 100M rows.
		rows /= 2
	}
	// They start in one step unless twoStepPays: once the sets' fresh
	// pages were written before they were probed (agg.firstWrite), one
	// step took less CPU and memory than two wherever the groups were
	// few (ClickBench's Q8 to Q11 at 100M rows; docs/engine.md has the
	// figures). With many groups the one step's tables cost more than
	// the two steps' partitions (Q13, by search phrase), so DISTINCT
	// aggregates alone run in one step only while the estimate finds at
	// most maxOneStepGroups groups (hashAggOp.distinctGroups); past them
	// the statement runs again in two.
	alone := true
	for _, sp := range q.specs {
		if sp.Kind != agg.CountDistinct && !sp.Distinct {
			alone = false
		}
	}
	if !s.forceTwoStep && !s.forceSplit && !s.replan.twoStep && !twoStepPays(rows, s.settings.Threads, s.settings.MemoryLimit) {
		s.replan.declined = true
		if alone {
			q.distinctGroups = maxOneStepGroups
			if s.maxOneStepGroups > 0 {
				q.distinctGroups = s.maxOneStepGroups
			}
		}
		return nil, nil, false
	}
	var err error
	switch {
	case !alone && splittable && !s.forceTwoStep:
		// The plain aggregates run as an ordinary GROUP BY of the keys
		// beside the two steps, over the same scan: the partitions
		// carry the (K, x) pairs alone.
		inner, top, err = s.splitDistinct(q, child, hint)
	case combinable:
		inner, top, err = s.groupedDistinct(q, x, child, hint)
	default:
		return nil, nil, false
	}
	if err != nil {
		return nil, nil, false
	}
	if s.replan.twoStep {
		inner.notes = append(inner.notes, "two steps, as "+s.replan.why+": the statement ran again")
	} else if lim := s.settings.MemoryLimit; !alone && lim > 0 && rows >= 0 {
		threads := max(s.settings.Threads, 1)
		filtered := ""
		if q.where != nil {
			filtered = ", half the table's under WHERE"
		}
		inner.notes = append(inner.notes, fmt.Sprintf(
			"two steps, as the (group, value) sets of one GROUP BY (a %d-byte slot per input row, ~%d rows%s, on each of %d workers: ~%s) could pass 1.5 times memory_limit (%s); these partitions spill where they must",
			pairSlotBytes, rows, filtered, threads, agg.FormatBytes(rows*pairSlotBytes*int64(threads)), agg.FormatBytes(lim)))
	}
	return inner, top, true
}

// avgCols locates an average of a two-step DISTINCT aggregation: its
// aggregate, and its outer sum and count columns.
type avgCols struct{ agg, sum, count int }

// pairSlotBytes is the memory of one (group, value) pair in the single
// GROUP BY's DISTINCT sets (agg/distinct.go): a 16-byte slot.
const pairSlotBytes = 16

// twoStepPays reports whether a grouped DISTINCT aggregation over rows
// input rows (-1: unknown) is better run in two steps from the start on
// threads under memoryLimit (0: none). The single GROUP BY keeps a set of
// (group, value) pairs per worker, which cannot spill; while the sets fit
// it is the faster of the two: one probe per row, where the two steps
// write every row (and the inputs of the other aggregates alongside) to
// partitions of the generic hash table's layout. At 100M rows under 2GB,
// ClickBench's Q8 took 9.8 s (7.3 s user) and 2.1 GB in one step, 16.5 s
// (13.8 s user) and 0.4 GB in two. A slot per input row on each worker
// bounds the sets; the one step's peak RSS was about two thirds of that
// bound (2.1 to 2.3 GB under limits from 1.7GB to 4GB, against 3.2 GB),
// so the two steps run from the start where the bound passes one and a
// half times the limit, which keeps the one step's RSS within the limit
// and a tenth. Where the sets pass the limit all the same, the statement
// runs again in two steps (retryInTwoSteps). A relation of unknown size
// (a subquery) starts with the single GROUP BY, as does a session
// without a limit.
func twoStepPays(rows int64, threads int, memoryLimit int64) bool {
	if rows < 0 || memoryLimit <= 0 {
		return false
	}
	return float64(rows)*pairSlotBytes*float64(max(threads, 1)) > 1.5*float64(memoryLimit)
}

// retryInTwoSteps reports whether a statement that failed with err is to
// be planned and run again with its grouped DISTINCT aggregations in two
// steps: it passed the memory limit with one that twoStepPays declined
// (whose sets, which cannot spill, may be what passed it), or one of
// DISTINCT aggregates alone found too many groups. It sets the
// session to plan them so for the rest of the statement (Session.replan).
func (s *Session) retryInTwoSteps(ctx context.Context, err error) bool {
	if !s.replan.declined || ctx.Err() != nil {
		return false
	}
	switch {
	case errors.Is(err, ErrMemoryLimit):
		s.replan.why = "the (group, value) sets of one GROUP BY passed memory_limit"
		s.notes = append(s.notes, fmt.Sprintf("a COUNT(DISTINCT) GROUP BY passed memory_limit (%v): ran again with the distinct pairs grouped first, in partitions that spill", err))
	case errors.Is(err, errManyDistinctGroups):
		s.replan.why = "one GROUP BY found more groups than one step serves well"
		s.notes = append(s.notes, fmt.Sprintf("a COUNT(DISTINCT) GROUP BY had more groups than one step serves well (%v): ran again with the distinct pairs grouped first", err))
	default:
		return false
	}
	s.replan.twoStep = true
	return true
}

// maxOneStepGroups is the most groups a grouped DISTINCT aggregation
// without other aggregates is run for in one step (twoStepDistinct).
const maxOneStepGroups = 1 << 16

// errManyDistinctGroups is the error of a grouped DISTINCT aggregation
// run in one step whose estimate found more groups than its
// distinctGroups: the statement runs again in two steps.
var errManyDistinctGroups = errors.New("too many groups for one step")
