package agg

import (
	"sync"

	"cachebook/engine/vec"
)

// groupSet is a hash table with the states of its groups.
type groupSet struct {
	table  *Table
	states []*State
	hashes []uint64
	gids   []uint32
}

func newGroupSet(keyTypes []vec.Type, specs []Spec, hint int, cfg Config) (*groupSet, error) {
	t, err := NewTable(keyTypes, hint, cfg.Budget)
	if err != nil {
		return nil, err
	}
	if cfg.PlainKeys {
		t.pack, t.packInit = packLayout{}, packLayout{}
	}
	gs := &groupSet{table: t}
	return gs, gs.newStates(specs, cfg)
}

// newStates gives the set's groups fresh aggregate states.
func (gs *groupSet) newStates(specs []Spec, cfg Config) error {
	gs.states = gs.states[:0]
	for _, sp := range specs {
		st, err := NewState(sp, cfg.Hasher, cfg.Budget)
		if err != nil {
			return err
		}
		gs.states = append(gs.states, st)
	}
	return nil
}

// restart empties the set for about hint groups of its own, keeping its
// table's slots (Table.restart): its keys and finished states went out as
// output.
func (gs *groupSet) restart(specs []Spec, hint int, cfg Config) error {
	if err := gs.table.restart(hint); err != nil {
		return err
	}
	return gs.newStates(specs, cfg)
}

// group finds or creates the groups of n rows whose hashes are known and
// makes room for them in every state.
func (gs *groupSet) group(keys []*vec.Vector, hashes []uint64, n int) ([]uint32, error) {
	if cap(gs.gids) < n {
		gs.gids = make([]uint32, n)
	}
	gids := gs.gids[:n]
	if err := gs.table.Group(keys, hashes, n, gids); err != nil {
		return nil, err
	}
	for _, st := range gs.states {
		if err := st.Resize(gs.table.Len()); err != nil {
			return nil, err
		}
	}
	return gids, nil
}

// add folds rows whose hashes are already known into the set.
func (gs *groupSet) add(keys, args []*vec.Vector, hashes []uint64, n int) error {
	gids, err := gs.group(keys, hashes, n)
	if err != nil {
		return err
	}
	for j, st := range gs.states {
		if err := st.Update(gids, args[j], n); err != nil {
			return err
		}
	}
	return nil
}

// merge folds partial states (columns as State.partial returns them, every
// aggregate's in turn) of groups whose hashes are known into the set.
func (gs *groupSet) merge(keys, partial []*vec.Vector, hashes []uint64, n int) error {
	gids, err := gs.group(keys, hashes, n)
	if err != nil {
		return err
	}
	for _, st := range gs.states {
		k := len(partialTypes(st.spec))
		if err := st.Merge(gids, partial[:k], n); err != nil {
			return err
		}
		partial = partial[k:]
	}
	return nil
}

func (gs *groupSet) addHashing(h *Hasher, in Input) error {
	if cap(gs.hashes) < in.N {
		gs.hashes = make([]uint64, in.N)
	}
	h.Hash(in.Keys, in.N, gs.hashes)
	return gs.add(in.Keys, in.Args, gs.hashes, in.N)
}

// finalize returns the aggregates' columns. The states are done with:
// their memory is returned to the budget, and whoever takes the columns
// charges them.
func (gs *groupSet) finalize() ([]*vec.Vector, error) {
	out := make([]*vec.Vector, len(gs.states))
	for j, st := range gs.states {
		v, err := st.Finalize(gs.table.Len())
		if err != nil {
			return nil, err
		}
		out[j] = v
	}
	for _, st := range gs.states {
		st.release()
	}
	return out, nil
}

// partSizer predicts the groups and string key bytes of a radix
// partition's table from the partitions aggregated before it. Hashing
// spreads the distinct keys evenly over the partitions, though not the
// rows (one hot key puts most rows in one partition), so a partition is
// expected to hold about the average groups of the others whatever its
// rows, each with about the average key bytes. A good prediction lets a
// table be allocated once instead of growing by doubling; the first
// partitions use the estimate of the groups when there is one, and a wrong
// guess falls back to growing.
type partSizer struct {
	mu          sync.Mutex
	parts       int     // partitions recorded
	groups      int64   // their groups
	kept        []int64 // their keys' string bytes, per key column
	firstGroups int     // groups expected per partition before any is recorded (0: unknown)
}

// newPartSizer returns a sizer for keys key columns; groupsHint is the
// estimated groups of the whole input (0: unknown), over nparts partitions.
func newPartSizer(keys int, groupsHint int64, nparts int) *partSizer {
	ps := &partSizer{kept: make([]int64, keys)}
	if groupsHint > 0 && nparts > 0 {
		ps.firstGroups = int(groupsHint/int64(nparts)) + 16
	}
	return ps
}

// predict returns, for a partition of rows rows, the groups to size its
// table for, and the groups and (per key column) string bytes to reserve
// its stored keys for.
//
// The table gets a quarter more than the average, so that most partitions
// fit without growing. The keys get less: Go zeroes a slice's whole
// capacity when it allocates it, so every byte reserved is written, and on
// fresh memory faulted in, whether a key ends up in it or not. A partition
// holds a share of the distinct keys that hashing makes nearly even (one of
// 20,000 groups is off by about 1%, its key bytes by a little more), so the
// keys get a sixteenth more than the average, and the rare partition beyond
// it grows.
func (ps *partSizer) predict(rows int) (groups, keyRows int, keyBytes []int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.parts < 2 || ps.groups == 0 {
		groups = rows / 2
		if ps.firstGroups > 0 {
			groups = min(groups, ps.firstGroups*2)
		}
		return groups, groups, nil
	}
	avg := ps.groups / int64(ps.parts)
	groups = int(min(int64(rows), avg*5/4+16))
	keyRows = int(min(int64(rows), avg*17/16+16))
	keyBytes = make([]int64, len(ps.kept))
	for c, k := range ps.kept {
		keyBytes[c] = k * int64(keyRows) / ps.groups
	}
	return groups, keyRows, keyBytes
}

// record adds an aggregated partition's figures.
func (ps *partSizer) record(t *Table) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.parts++
	ps.groups += int64(t.Len())
	for c, k := range t.Keys() {
		if c < len(ps.kept) {
			ps.kept[c] += int64(len(k.Bytes))
		}
	}
}
