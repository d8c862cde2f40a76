// Command cghelper runs one GROUP BY of the real engine for the cache
// model's comparison with cachegrind (engine/cachesim/trace): built
// without the race detector and run under valgrind by the test.
//
//	cghelper STRATEGY ROWS GROUPS BITS PHASE GENERIC
//
// It generates the keys (testkeys.Keys), evicts them from the caches by
// reading 64 MiB, and in phase 1 runs SELECT k, count(*) GROUP BY k with
// the given strategy (0 naive, 1 radix) on one thread; phase 0 stops
// before the query, so that the difference of the two runs' counts is the
// query's.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"cachebook/engine/agg"
	"cachebook/engine/cachesim/internal/testkeys"
	"cachebook/engine/vec"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cghelper:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("usage: cghelper STRATEGY ROWS GROUPS BITS PHASE GENERIC")
	}
	var n [5]int
	for i := range n {
		v, err := strconv.Atoi(args[i])
		if err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
		n[i] = v
	}
	generic, err := strconv.ParseBool(args[5])
	if err != nil {
		return fmt.Errorf("argument 6: %w", err)
	}
	strategy, rows, groups, bits, phase := agg.Strategy(n[0]), n[1], n[2], n[3], n[4]
	debug.SetGCPercent(-1)
	keys := testkeys.Keys(rows, groups, 1)
	// Generating the keys left them in the caches; the model starts cold.
	sweep := make([]int64, 8<<20)
	for i := range sweep {
		sweep[i] = int64(i)
	}
	var sum int64
	for _, v := range sweep {
		sum += v
	}
	fmt.Fprintln(os.Stderr, "sweep", sum)
	if phase == 0 {
		return nil
	}
	done := false
	src := func(int) (agg.Input, bool, error) {
		if done {
			return agg.Input{}, false, nil
		}
		done = true
		v := &vec.Vector{Type: vec.Int64, I64: keys, Len: len(keys)}
		return agg.Input{Keys: []*vec.Vector{v}, Args: []*vec.Vector{nil}, N: len(keys)}, true, nil
	}
	out, err := agg.Aggregate(context.Background(), []vec.Type{vec.Int64}, []agg.Spec{{Kind: agg.CountStar}},
		agg.Config{Strategy: strategy, Threads: 1, RadixBits: bits, RowsHint: int64(rows), Generic: generic}, src)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "groups", out.Groups)
	return nil
}
