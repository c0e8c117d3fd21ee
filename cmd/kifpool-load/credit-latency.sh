#!/bin/sh
# credit-latency.sh DBURL SECONDS [CLIENTS]: runs cmd/kifpool-load/credit.pgbench
# against a seeded database (make bench-admin's, or a smaller -topups one)
# and prints credits/s and the latency p50/p95/p99 of each credit (ms),
# with the load average and what the run wrote into the WAL per credit:
# full-page images (FPI) and bytes, from pg_stat_wal (PostgreSQL 14+;
# server-wide, so run it with nothing else writing to the server).
# With STEP=N (seconds) it also prints one such line per N seconds of
# the run, so a long run shows how the WAL per credit falls between two
# checkpoints. With RATE=N the clients start N credits a second between
# them (pgbench -R): latency at a set load instead of at saturation.
# Writes into the database: top-ups credited by the script (kifpool
# check still holds on it: each is a whole credit).
set -eu
db=$1 secs=$2 clients=${3:-4} step=${STEP:-0} rate=${RATE:+-R $RATE}
PGBENCH=${PGBENCH:-$(ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | sort | tail -1)}
q() { psql -X -qAt "$db" -c "$1"; }
first=$(q "SELECT min(id) FROM ledger_accounts WHERE kind = 'wallet'")
wallets=$(q "SELECT count(*) FROM ledger_accounts WHERE kind = 'wallet' AND id < $first + 100000")
wallets=$(q "SELECT count(*) FROM ledger_accounts WHERE kind = 'wallet' AND id BETWEEN $first AND $first + $wallets - 1")
c0=$(q "SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal'")
cfirst=$(q "SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal#1'")
for k in 2 3 4 5 6 7; do
	test "$(q "SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal#$k'")" = $((cfirst + k - 1)) || { echo "clearing slots not consecutive" >&2; exit 1; }
done
dir=$(mktemp -d)
here=$(cd "$(dirname "$0")" && pwd)
wal() { q "SELECT extract(epoch FROM clock_timestamp())::bigint, wal_fpi, wal_bytes FROM pg_stat_wal" | tr '|' ' '; }
wal >"$dir/wal"
if [ "$step" -gt 0 ]; then
	(k=1; while [ $((k * step)) -lt "$secs" ]; do sleep "$step"; wal >>"$dir/wal"; k=$((k + 1)); done) &
	sampler=$!
fi
(cd "$dir" && "$PGBENCH" -n -M prepared -c "$clients" -j 2 -T "$secs" $rate -l -D first="$first" -D wallets="$wallets" -D c0="$c0" -D cfirst="$cfirst" \
	-f "$here/credit.pgbench" "$db" >pgbench.out 2>&1) || { cat "$dir/pgbench.out"; exit 1; }
[ "$step" -gt 0 ] && wait "$sampler"
wal >>"$dir/wal"
la=$(cut -d' ' -f1-3 /proc/loadavg)
tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$dir/pgbench.out")
# Each log line: client, transaction, latency (us), script, epoch seconds, us.
# The WAL samples split the run into intervals (bucket 2.. n); bucket W (last
# once sorted) is the whole run. Lines go out as "bucket latency", sorted, then summed up.
awk -v W=1000000000 -v walf="$dir/wal" '
	BEGIN { while ((getline l < walf) > 0) n++; close(walf); while ((getline l < walf) > 0) { split(l, f, " "); at[++k] = f[1] } }
	{ print W, $3; if (n > 2) for (i = 2; i <= n; i++) if ($5 < at[i] || i == n) { print i, $3; break } }' "$dir"/pgbench_log.* |
	sort -k1,1n -k2,2n | awk -v W=1000000000 -v tps="$tps" -v la="$la" -v walf="$dir/wal" '
	BEGIN { while ((getline l < walf) > 0) { split(l, f, " "); n++; at[n] = f[1]; fpi[n] = f[2]; bytes[n] = f[3] } }
	function pick(p,   i) { i = int(k * p); if (i < 1) i = 1; return v[i] / 1000 }
	function flush(   secs, df, db) {
		if (k == 0) return
		if (b == W) { secs = k / tps; df = fpi[n] - fpi[1]; db = bytes[n] - bytes[1]; printf "whole run (load %s): ", la }
		else { secs = at[b] - at[b-1]; df = fpi[b] - fpi[b-1]; db = bytes[b] - bytes[b-1]; printf "%5ds: ", at[b] - at[1] }
		printf "credits/s %.0f  n %d  p50 %.1f ms  p95 %.1f ms  p99 %.1f ms  max %.1f ms  FPI/credit %.2f  WAL/credit %.1f kB\n",
			(secs > 0 ? k / secs : 0), k, pick(0.5), pick(0.95), pick(0.99), v[k] / 1000, df / k, db / k / 1024
	}
	$1 != b { if (NR > 1) flush(); b = $1; k = 0 }
	{ v[++k] = $2 }
	END { flush() }'
rm -rf "$dir"
