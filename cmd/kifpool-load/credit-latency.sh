#!/bin/sh
# credit-latency.sh DBURL SECONDS [CLIENTS]: runs cmd/kifpool-load/credit.pgbench
# against a seeded database (make bench-admin's, or a smaller -topups one)
# and prints credits/s and the latency p50/p95/p99 of each credit (ms),
# with the load average. Writes into the database: top-ups credited
# by the script (kifpool check still holds on it: each is a whole credit).
set -eu
db=$1 secs=$2 clients=${3:-4}
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
(cd "$dir" && "$PGBENCH" -n -M prepared -c "$clients" -j 2 -T "$secs" -l -D first="$first" -D wallets="$wallets" -D c0="$c0" -D cfirst="$cfirst" \
	-f "$here/credit.pgbench" "$db" >pgbench.out 2>&1) || { cat "$dir/pgbench.out"; exit 1; }
tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$dir/pgbench.out")
cat "$dir"/pgbench_log.* | awk '{print $3}' | sort -n | awk -v tps="$tps" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" '
	{ v[NR] = $1 } END { printf "credits/s %.0f  n %d  p50 %.1f ms  p95 %.1f ms  p99 %.1f ms  max %.1f ms  (load %s)\n", tps, NR,
		v[int(NR*0.5)]/1000, v[int(NR*0.95)]/1000, v[int(NR*0.99)]/1000, v[NR]/1000, la }'
rm -rf "$dir"
