package engine

import (
	"strings"
	"testing"
)

// TestDroppedKeys: GROUP BY keys that cannot split a group (constants,
// expressions of column keys, repeats) are not hashed, and every clause
// that names one still sees its value.
func TestDroppedKeys(t *testing.T) {
	db := testDB(t)
	tests := []sqlCase{
		// Constant keys.
		{"SELECT 1, k, count(*) FROM t GROUP BY 1, k ORDER BY k LIMIT 2", "1,0,100;1,1,100"},
		{"SELECT 'x' AS c, k, count(*) FROM t GROUP BY c, k, 2 + 3 ORDER BY k DESC LIMIT 1", "x,9,100"},
		{"SELECT 1, count(*) FROM t GROUP BY 1", "1,1000"},
		{"SELECT 1, 'a', count(*) FROM t GROUP BY 1, 2", "1,a,1000"},
		// Every key constant over no rows: no group, unlike an
		// ungrouped aggregate's one row.
		{"SELECT 1, count(*) FROM empty GROUP BY 1", ""},
		{"SELECT 1, 'a', count(*) FROM empty GROUP BY 1, 2", ""},
		{"SELECT 1, count(*) FROM t WHERE k > 100 GROUP BY 1", ""},
		{"SELECT 1, k, count(*) FROM empty GROUP BY 1, k", ""},
		{"SELECT count(*) FROM empty", "0"},
		// Keys computed from a column key, NULLs in one group.
		{"SELECT v, v - 1 AS w, count(*) FROM t WHERE k < 2 GROUP BY v, v - 1 ORDER BY w NULLS FIRST LIMIT 3",
			"NULL,NULL,100;1,0,1;11,10,1"},
		{"SELECT k, k - 1, k * 2, count(*) FROM t GROUP BY k, k - 1, k * 2 ORDER BY 3 DESC LIMIT 2", "9,8,18,100;8,7,16,100"},
		{"SELECT k, count(*) FROM t GROUP BY k, k * 2 HAVING k * 2 > 14 ORDER BY k * 2 DESC", "9,100;8,100"},
		{"SELECT k + 1 AS n, count(*) FROM t GROUP BY k, n ORDER BY n LIMIT 2", "1,100;2,100"},
		{"SELECT K - 1, count(*) FROM t GROUP BY k, K - 1 ORDER BY 1 LIMIT 1", "-1,100"},
		{"SELECT (k - 1) * 10, count(*) FROM t GROUP BY k - 1, k ORDER BY 1 LIMIT 1", "-10,100"},
		{"SELECT k, neg, k + neg, count(*) FROM t GROUP BY k, neg, k + neg ORDER BY 3, 1 LIMIT 2", "0,-3,-3,15;0,-2,-2,14"},
		{"SELECT day, year(day), count(*) FROM t GROUP BY day, year(day) ORDER BY day LIMIT 1", "2013-07-01,2013,33"},
		{"SELECT g, upper(g), count(*) FROM t GROUP BY g, upper(g) ORDER BY g", "g0,G0,334;g1,G1,333;g2,G2,333"},
		// Repeated keys.
		{"SELECT k, count(*) FROM t GROUP BY k, k ORDER BY k LIMIT 1", "0,100"},
		{"SELECT k + 1, count(*) FROM t GROUP BY k + 1, k + 1 ORDER BY 1 LIMIT 1", "1,100"},
		// SELECT DISTINCT groups by its items.
		{"SELECT DISTINCT k, k + 1 FROM t ORDER BY k LIMIT 2", "0,1;1,2"},
		{"SELECT DISTINCT 1, g FROM t ORDER BY g", "1,g0;1,g1;1,g2"},
		// Not determined: v is no key; a FLOAT key determines nothing.
		{"SELECT k, v + 1 AS w, count(*) FROM t WHERE k = 1 GROUP BY k, v + 1 ORDER BY w LIMIT 1", "1,2,1"},
		{"SELECT f, f + 1, count(*) FROM t GROUP BY f, f + 1 ORDER BY f LIMIT 1", "0,1,1"},
	}
	runEveryStrategy(t, db, tests)
}

// TestDroppedKeysExplain: EXPLAIN names the hashed keys and says what it
// did with the others.
func TestDroppedKeysExplain(t *testing.T) {
	db := testDB(t)
	s := db.NewSession()
	tests := []struct {
		sql      string
		want     []string
		dontWant []string
	}{
		{"SELECT 1, g, count(*) FROM t GROUP BY 1, g",
			[]string{"keys: g\n", "constant keys, not hashed: 1"}, nil},
		{"SELECT k, k - 1, k - 2, count(*) FROM t GROUP BY k, k - 1, k - 2",
			[]string{"keys: k (k - 1, k - 2 computed from it)"}, []string{"constant"}},
		{"SELECT k, neg, k + neg, count(*) FROM t GROUP BY k, neg, k + neg",
			[]string{"keys: k, neg\n", "keys computed from the keys after grouping, not hashed: k + neg"}, nil},
		{"SELECT k, count(*) FROM t GROUP BY k, k",
			[]string{"keys: k\n", "repeated keys, not hashed: k"}, nil},
		{"SELECT 1, 2, count(*) FROM t GROUP BY 1, 2",
			[]string{"keys: 1\n", "constant keys, not hashed: 2"}, nil},
		{"SELECT f, f + 1, count(*) FROM t GROUP BY f, f + 1",
			[]string{"keys: f, f + 1\n"}, []string{"not hashed", "computed"}},
		{"SELECT k, v + 1, count(*) FROM t GROUP BY k, v + 1",
			[]string{"keys: k, v + 1\n"}, []string{"not hashed", "computed"}},
	}
	for _, tc := range tests {
		got := runSQL(t, s, "EXPLAIN "+tc.sql)
		// Rows are rendered one a line after trimming the padding.
		var lines []string
		for _, l := range strings.Split(got, ";") {
			lines = append(lines, strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "│ ")))
		}
		plan := strings.Join(lines, "\n") + "\n"
		for _, w := range tc.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s: EXPLAIN lacks %q:\n%s", tc.sql, w, plan)
			}
		}
		for _, w := range tc.dontWant {
			if strings.Contains(plan, w) {
				t.Errorf("%s: EXPLAIN has %q:\n%s", tc.sql, w, plan)
			}
		}
	}
}
