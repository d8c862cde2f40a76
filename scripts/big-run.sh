#!/usr/bin/env bash
# big-run.sh: the 100M-row run of issue 11. Generates (if missing) a
# ClickBench-shaped hits table of ROWS rows in DATA, then runs the first
# look (SELECT * FROM hits LIMIT 3) and each of the 43 ClickBench queries
# in its own cachebook process under SET memory_limit = LIMIT, printing
# one line per query: its number, status (ok, or the error's first line),
# wall seconds and the process's peak resident memory.
#
#	scripts/big-run.sh                  # 100M rows in /tmp/cachebook-big, 4GB
#	ROWS=10000000 LIMIT=1GB scripts/big-run.sh
#
# It needs about 9.3 GB of disk per 100M rows and takes tens of minutes.
set -euo pipefail
ROWS=${ROWS:-100000000}
DATA=${DATA:-/tmp/cachebook-big}
LIMIT=${LIMIT:-4GB}
THREADS=${THREADS:-0}
# The column cache is memory the engine keeps between queries, outside
# memory_limit; each query runs in a process of its own, so a small cache
# costs little and the peak RSS shows the query's own memory.
CACHE=${CACHE:-512MiB}
START=${START:-0}
BIN=${BIN:-bin/cachebook}
QUERIES=${QUERIES:-engine/sql/testdata/clickbench.sql}
export GODEBUG=madvdontneed=0

test -x "$BIN" || go build -o "$BIN" ./cmd/cachebook
if ! test -f "$DATA/hits.parquet"; then
	/usr/bin/time -f "generated $ROWS rows in %e s, peak RSS %M KiB" "$BIN" gen --rows "$ROWS" --order shuffled --seed 1 --out "$DATA"
fi
ls -l "$DATA/hits.parquet"

settings="SET memory_limit = '$LIMIT'"
if [ "$THREADS" != 0 ]; then settings="$settings; SET threads = $THREADS"; fi

run() { # run LABEL SQL
	local out rc=0 t
	t=$(mktemp)
	out=$(/usr/bin/time -o "$t" -f "%e %M" "$BIN" query --data "$DATA" --cache "$CACHE" --format tsv "$settings; $2" 2>&1) || rc=$?
	# time(1) writes "Command exited with non-zero status N" first.
	read -r secs kib < <(tail -1 "$t")
	rm -f "$t"
	local status=ok
	if [ $rc -ne 0 ]; then
		status="exit $rc: $(printf '%s\n' "$out" | grep -v '^$' | tail -1 | cut -c1-160)"
	fi
	printf '%s\t%s\t%.2f s\t%d MiB\n' "$1" "$status" "$secs" $((kib / 1024))
}

[ "$START" = 0 ] && run "first-look" "SELECT * FROM hits LIMIT 3"
n=0
while IFS= read -r q; do
	[ -z "$q" ] && continue
	[ "$n" -ge "$START" ] && run "Q$n" "$q"
	n=$((n + 1))
done <"$QUERIES"
