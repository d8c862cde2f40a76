package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"cachebook/engine/sql"
	"cachebook/engine/vec"
)

// benchBatch builds a batch shaped like a ClickBench slice.
func benchBatch(n int) ([]vec.Column, *vec.Batch) {
	cols := []vec.Column{
		{Name: "CounterID", Type: vec.Int32}, {Name: "EventDate", Type: vec.Date},
		{Name: "IsRefresh", Type: vec.Int16}, {Name: "ResolutionWidth", Type: vec.Int16},
		{Name: "EventTime", Type: vec.Int64}, {Name: "URL", Type: vec.String},
		{Name: "SearchPhrase", Type: vec.String},
	}
	r := rand.New(rand.NewPCG(1, 2))
	b := &vec.Batch{Len: n}
	for _, c := range cols {
		b.Vecs = append(b.Vecs, vec.NewVector(c.Type, n))
	}
	hosts := []string{"google", "yandex", "example", "mail"}
	for i := 0; i < n; i++ {
		b.Vecs[0].AppendInt(int64(r.IntN(100)))
		b.Vecs[1].AppendInt(15887 + int64(r.IntN(31)))
		b.Vecs[2].AppendInt(int64(r.IntN(2)))
		b.Vecs[3].AppendInt(int64(r.IntN(2000)))
		b.Vecs[4].AppendInt(1372636800 + int64(r.IntN(31*86400)))
		b.Vecs[5].AppendStr([]byte(fmt.Sprintf("http://www.%s.com/page/%d?q=%d", hosts[r.IntN(4)], r.IntN(1000), r.IntN(1e6))))
		if r.IntN(8) == 0 {
			b.Vecs[6].AppendStr([]byte(fmt.Sprintf("phrase %d", r.IntN(1000))))
		} else {
			b.Vecs[6].AppendStr(nil)
		}
	}
	return cols, b
}

func BenchmarkEval(b *testing.B) {
	const n = 1 << 16
	cols, batch := benchBatch(n)
	for _, src := range []string{
		"SearchPhrase <> ''",
		"URL LIKE '%google%'",
		"ResolutionWidth + 1",
		"CounterID = 62 AND EventDate >= '2013-07-01' AND EventDate <= '2013-07-31' AND IsRefresh = 0",
		"extract(minute FROM toDateTime(EventTime))",
		"date_trunc('minute', toDateTime(EventTime))",
		"REGEXP_REPLACE(URL, '^https?://(?:www\\.)?([^/]+)/.*$', '\\1')",
		"CASE WHEN IsRefresh = 0 THEN URL ELSE '' END",
	} {
		ast, err := sql.ParseExpr(src)
		if err != nil {
			b.Fatal(err)
		}
		e, err := (&Binder{Columns: cols}).Bind(ast)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Eval(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
		})
	}
}

func BenchmarkSelect(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(3, 4))
	pred := &vec.Vector{Type: vec.Bool, Len: n, I64: make([]int64, n)}
	for i := range pred.I64 {
		pred.I64[i] = int64(r.IntN(2))
	}
	sel := make([]int32, n)
	b.ReportAllocs()
	for b.Loop() {
		sel = Select(pred, sel)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
}

// BenchmarkFilter compares Filter.Select with Eval and Select over the
// same predicates, per row of a morsel-sized batch.
func BenchmarkFilter(b *testing.B) {
	const n = 1 << 14
	cols, batch := benchBatch(n)
	for _, src := range []string{
		"CounterID = 62",
		"IsRefresh <> 0",
		"SearchPhrase <> ''",
		"URL LIKE '%google%'",
		"URL LIKE '%google%' AND SearchPhrase <> ''",
		"CounterID = 62 AND EventDate >= '2013-07-01' AND EventDate <= '2013-07-31' AND IsRefresh = 0",
	} {
		ast, err := sql.ParseExpr(src)
		if err != nil {
			b.Fatal(err)
		}
		e, err := (&Binder{Columns: cols}).Bind(ast)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("eval/"+src, func(b *testing.B) {
			b.ReportAllocs()
			var sel []int32
			for b.Loop() {
				v, err := e.Eval(batch)
				if err != nil {
					b.Fatal(err)
				}
				sel = Select(v, sel)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
		})
		b.Run("filter/"+src, func(b *testing.B) {
			f := NewFilter(e)
			var sc FilterScratch
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Select(batch, &sc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
		})
	}
}
