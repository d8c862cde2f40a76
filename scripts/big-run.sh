#!/usr/bin/env bash
# big-run.sh: the 100M-row run of issues 11 and 31. Generates (if missing) a
# ClickBench-shaped hits table of ROWS rows in DATA, then runs the first
# look (SELECT * FROM hits LIMIT 3) and each of the 43 ClickBench queries
# in its own cachebook process under SET memory_limit = LIMIT and, right
# after it, in its own DuckDB process (bin/duckbench -query, over a view of
# the same Parquet file, as ClickBench's duckdb-parquet setup) under the
# same memory_limit and threads. It prints one line per query: its number,
# then for each engine its status (ok, or the error's first line), wall
# seconds, the process's peak resident memory and the rows it returned,
# then cachebook's time over DuckDB's. With ROUNDS=n, each query runs n
# times in each engine, the engines taking turns, and the line gives the
# median seconds and the largest peak resident memory of each: on a
# shared machine one run of a query a few seconds long moves by a tenth.
#
#	scripts/big-run.sh                  # 100M rows in /tmp/cachebook-big, 4GB
#	ROWS=10000000 LIMIT=1GB scripts/big-run.sh
#	ONLY="16 17 18" DUCK= scripts/big-run.sh   # cachebook alone, three queries
#	ROUNDS=3 ONLY="19 40" scripts/big-run.sh   # medians of three
#
# It needs about 9.3 GB of disk per 100M rows and takes tens of minutes.
set -euo pipefail
ROWS=${ROWS:-100000000}
DATA=${DATA:-/tmp/cachebook-big}
LIMIT=${LIMIT:-4GB}
# Both engines get the same threads; 0 means one per core.
THREADS=${THREADS:-0}
[ "$THREADS" = 0 ] && THREADS=$(nproc)
# The column cache is memory the engine keeps between queries, outside
# memory_limit; each query runs in a process of its own, so a small cache
# costs little and the peak RSS shows the query's own memory.
CACHE=${CACHE:-512MiB}
START=${START:-0}
ONLY=${ONLY:-} # e.g. "4 16 18": only these query numbers
BIN=${BIN:-bin/cachebook}
DUCK=${DUCK-bin/duckbench} # empty: cachebook alone
# DuckDB spills here (its default is .tmp in the working directory).
DUCK_TMP=${DUCK_TMP:-${TMPDIR:-/tmp}/big-run-duckdb.tmp}
# Wall-clock limit of one process, in seconds.
TIMEOUT=${TIMEOUT:-1800}
QUERIES=${QUERIES:-engine/sql/testdata/clickbench.sql}
ROUNDS=${ROUNDS:-1}
# Go's default way of returning freed heap pages (MADV_DONTNEED), as
# `cachebook query` runs for a user: with GODEBUG=madvdontneed=0 the pages
# the runtime gave back stay in the resident set until the kernel needs
# them, and the peak RSS would count memory the process no longer holds.
# GODEBUG=madvdontneed=0 scripts/big-run.sh measures the server's setting.

test -x "$BIN" || go build -o "$BIN" ./cmd/cachebook
if [ -n "$DUCK" ] && ! test -x "$DUCK"; then
	(cd difftest && go build -o "$OLDPWD/$DUCK" ./cmd/duckbench)
fi
if ! test -f "$DATA/hits.parquet"; then
	/usr/bin/time -f "generated $ROWS rows in %e s, peak RSS %M KiB" "$BIN" gen --rows "$ROWS" --order shuffled --seed 1 --out "$DATA"
fi
ls -l "$DATA/hits.parquet"
parquet=$(cd "$DATA" && pwd)/hits.parquet

# Read the file once, so that the page cache holds it for both engines:
# otherwise the engine that runs first reads its columns from the disk.
# Some VMs reclaim page cache that sat idle for a while (kdamond), so
# with WARM=each (the default) the file is read again before every
# process, outside its time: the engine that ran first no longer pays
# for both. WARM=once reads it only here.
WARM=${WARM:-each}
cat "$parquet" >/dev/null

settings="SET memory_limit = '$LIMIT'; SET threads = $THREADS"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure CMD...: runs CMD under time(1) and timeout(1), stdout to
# $tmp/out, stderr to $tmp/err; sets rc, secs, mib.
measure() {
	rc=0
	[ "$WARM" = each ] && cat "$parquet" >/dev/null
	timeout "$TIMEOUT" /usr/bin/time -o "$tmp/time" -f "%e %M" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	# time(1) writes "Command exited with non-zero status N" first.
	local kib
	read -r secs kib < <(tail -1 "$tmp/time" 2>/dev/null || echo "0 0")
	[ "$rc" = 124 ] && secs=$TIMEOUT
	mib=$((kib / 1024))
}

ours() { # ours SQL: prints status, seconds, MiB, rows
	measure "$BIN" query --data "$DATA" --cache "$CACHE" --format tsv "$settings; $1"
	local status=ok rows
	rows=$(wc -l <"$tmp/out") # a header line, then the rows
	rows=$((rows > 0 ? rows - 1 : 0))
	if [ "$rc" = 124 ]; then
		status="timeout after ${TIMEOUT}s"
	elif [ "$rc" != 0 ]; then
		status="exit $rc: $(grep -m1 'cachebook query:' "$tmp/err" | cut -c1-300 || true)"
	fi
	printf '%s\t%.2f\t%d\t%d' "$status" "$secs" "$mib" "$rows"
}

duck() { # duck SQL: prints status, seconds, MiB, rows
	measure "$DUCK" -threads "$THREADS" -memory-limit "$LIMIT" -temp-directory "$DUCK_TMP" -parquet "$parquet" -query "$1"
	rm -rf "$DUCK_TMP"
	local status=ok rows
	rows=$(grep -o '"rows":[0-9]*' "$tmp/out" | cut -d: -f2 || true)
	if [ "$rc" = 124 ]; then
		status="timeout after ${TIMEOUT}s"
	elif [ "$rc" != 0 ]; then
		status="exit $rc: $(grep -m1 'duckbench:' "$tmp/err" | cut -c1-300 || true)"
	fi
	printf '%s\t%.2f\t%d\t%d' "$status" "$secs" "$mib" "${rows:-0}"
}

# summary LINE...: one line of status, seconds, MiB, rows from the rounds'
# lines: the first status that is not ok (else ok), the median seconds, the
# largest MiB, the first round's rows.
summary() {
	local med mib rows st
	med=$(printf '%s\n' "$@" | cut -f2 | sort -n | awk '{ a[NR] = $1 }
		END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
	mib=$(printf '%s\n' "$@" | cut -f3 | sort -n | tail -1)
	rows=$(printf '%s\n' "$1" | cut -f4)
	st=$(printf '%s\n' "$@" | cut -f1 | grep -v -m1 '^ok$' || echo ok)
	printf '%s\t%.2f\t%d\t%d' "$st" "$med" "$mib" "$rows"
}

run() { # run LABEL SQL
	local a b ratio="" r
	local -a as=() bs=()
	for ((r = 0; r < ROUNDS; r++)); do
		as+=("$(ours "$2")")
		[ -n "$DUCK" ] && bs+=("$(duck "$2")")
	done
	a=$(summary "${as[@]}")
	printf '%s\t%s' "$1" "$a"
	if [ -n "$DUCK" ]; then
		b=$(summary "${bs[@]}")
		ratio=$(awk -F'\t' -v a="$a" -v b="$b" 'BEGIN {
			split(a, x, "\t"); split(b, y, "\t")
			if (x[1] == "ok" && y[1] == "ok" && y[2] > 0) printf "%.2f", x[2] / y[2]
			if (x[1] == "ok" && y[1] == "ok" && x[4] != y[4]) printf " rows differ"
		}')
		printf '\t%s\t%s' "$b" "$ratio"
	fi
	printf '\n'
}

printf '# %s rows, memory_limit %s, threads %s, rounds %s, %s\n' "$ROWS" "$LIMIT" "$THREADS" "$ROUNDS" "$(date -u +%FT%TZ)"
printf 'query\tcachebook\ts\tMiB\trows'
[ -n "$DUCK" ] && printf '\tduckdb\ts\tMiB\trows\tratio'
printf '\n'
[ "$START" = 0 ] && [ -z "$ONLY" ] && run "first-look" "SELECT * FROM hits LIMIT 3"
n=0
while IFS= read -r q; do
	[ -z "$q" ] && continue
	if [ -n "$ONLY" ]; then
		case " $ONLY " in *" $n "*) run "Q$n" "$q" ;; esac
	elif [ "$n" -ge "$START" ]; then
		run "Q$n" "$q"
	fi
	n=$((n + 1))
done <"$QUERIES"
