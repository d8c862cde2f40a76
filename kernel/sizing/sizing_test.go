package sizing

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"cachebook/engine"
	"cachebook/kernel/latency"
)

func TestNew(t *testing.T) {
	big := Budget{Memory: 1 << 30, MaxRows: 16_000_000}
	tests := []struct {
		name   string
		l3     int64
		b      Budget
		capped bool
	}{
		{"small L3 fits the budget", 2 << 20, big, false},
		{"8 MiB L3", 8 << 20, big, false},
		{"a VM's 300 MiB socket L3", 300 << 20, big, true},
		{"the browser", AssumedL3, BrowserBudget(512 << 20), true},
		{"memory binds before rows", 8 << 20, Budget{Memory: 16 << 20, MaxRows: 16_000_000}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.l3, "sysfs", tt.b)
			if p.Capped != tt.capped {
				t.Errorf("capped = %v, want %v (%s)", p.Capped, tt.capped, p)
			}
			if !p.Capped && p.TableBytes < TargetFactor*tt.l3 {
				t.Errorf("table %d B < %d× L3 %d B", p.TableBytes, TargetFactor, tt.l3)
			}
			if p.Rows > tt.b.MaxRows || p.Rows*rowBytes+p.TableBytes > tt.b.Memory+p.TableBytes/2 {
				t.Errorf("plan %+v exceeds budget %+v", p, tt.b)
			}
			if p.Rows != p.Groups*RowsPerGroup || p.TableBytes != TableBytes(p.Groups) {
				t.Errorf("inconsistent plan %+v", p)
			}
			s := p.String()
			for _, want := range []string{"rows", "distinct keys", "hash table", "L3"} {
				if !strings.Contains(s, want) {
					t.Errorf("%q lacks %q", s, want)
				}
			}
			if strings.Contains(s, "capped") != p.Capped {
				t.Errorf("%q: capped is %v", s, p.Capped)
			}
		})
	}
}

func TestL3(t *testing.T) {
	caches := []latency.Cache{{Level: 1, Type: "Data", SizeBytes: 48 << 10}, {Level: 1, Type: "Instruction", SizeBytes: 1 << 30},
		{Level: 2, Type: "Unified", SizeBytes: 2 << 20}, {Level: 3, Type: "Unified", SizeBytes: 32 << 20}}
	if l3, src := L3(caches, "sysfs"); l3 != 32<<20 || src != "sysfs" {
		t.Errorf("L3 = %d %s", l3, src)
	}
	if l3, _ := L3(caches[:3], "cpuid"); l3 != 2<<20 {
		t.Errorf("without an L3: %d, want the L2", l3)
	}
	if l3, src := L3(nil, "none"); l3 != AssumedL3 || src != "assumed" {
		t.Errorf("no caches: %d %s", l3, src)
	}
}

// TestKeysTable generates a small plan and checks the table the engine
// sees: the rows, exactly Groups distinct k, SmallGroups distinct s.
func TestKeysTable(t *testing.T) {
	p := Plan{Rows: 50_000, Groups: 5_000}
	db, err := engine.Open(engine.Options{MaxThreads: runtime.NumCPU()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Register(context.Background(), db, 1); err != nil {
		t.Fatal(err)
	}
	res, err := db.NewSession().Exec(context.Background(), "SELECT count(*), count(DISTINCT k), count(DISTINCT s) FROM keys", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{res[0].Vecs[0].Format(0), res[0].Vecs[1].Format(0), res[0].Vecs[2].Format(0)}
	if want := []string{"50000", "5000", "1000"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("count, distinct k, distinct s = %v, want %v", got, want)
	}
}
