#!/bin/sh
# test_redis_shards.sh - amq export --to redis --shards N / amq import --from redis --shards N
# without a server (docs/cluster.md): the keys and metadata written, the round trip back to
# files, and the refusals.  tests/redis/test_sharded.py loads the same output into a cluster.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

seq -f 'k-%g' 1 3000 >k0
seq -f 'k-%g' 3001 6000 >k1
seq -f 'k-%g' 6001 9000 >k2
seq -f 'k-%g' 1 12000 >probe
for i in 0 1 2; do
    "$AMQ" build --type scalable-bloom --redisbloom --fpp 0.01 s$i.amq k$i || fail "build s$i"
done
"$AMQ" build --type scalable-cuckoo --redisbloom c.amq k1 || fail "build c"
"$AMQ" build --type blocked b.amq k1 || fail "build b"

CASE=export-keys
expect_status 0 "$AMQ" export --to redis --shards 3 users:seen s0.amq s1.amq s2.amq out.resp
# The keys of docs/cluster.md's example (N = 3): NAME:{0.1}, NAME:{1.0}, NAME:{2.0}.
for k in 'users:seen:{0.1}' 'users:seen:{1.0}' 'users:seen:{2.0}'; do
    grep -aqF "\$${#k}
$k" out.resp 2>/dev/null || grep -aqF "$k" out.resp || fail "no key $k"
done
expect_eq "shard 1's staging key: DEL, two chunks, RENAMENX, DEL" 5 \
    "$(grep -ac 'users:seen:{1.0}.amq-load' out.resp)"
# The metadata is the last command: SET NAME <json> NX.
tail -c 600 out.resp | tr -d '\r' >tail.txt
grep -q '"format": "amq-sharded-filter"' tail.txt || fail "metadata format: $(cat tail.txt)"
grep -q '"keys": \["users:seen:{0.1}", "users:seen:{1.0}", "users:seen:{2.0}"\]' tail.txt ||
    fail "metadata keys: $(cat tail.txt)"
grep -q '"shard_seed": "0x616d712e73686172"' tail.txt || fail "metadata seed"
grep -q '"shards": 3, "version": 1}' tail.txt || fail "metadata shards/version"
expect_eq "SET ... NX last" "NX" "$(tail -n 1 tail.txt)"
expect_status 0 "$AMQ" export --to redis --shards 3 --replace users:seen s0.amq s1.amq s2.amq r.resp
expect_eq "--replace renames with RENAME" 3 "$(grep -ac '^RENAME' r.resp)"
expect_eq "--replace: SET without NX" '"version": 1}' "$(tr -d '\r' <r.resp | tail -n 1 | tail -c 14)"

CASE=import-round-trip
expect_status 0 "$AMQ" import --from redis --shards 3 out.resp o0.amq o1.amq o2.amq
for i in 0 1 2; do
    "$AMQ" query s$i.amq probe >want$i
    "$AMQ" query o$i.amq probe >got$i
    expect_same_file want$i got$i
done
expect_eq "shard 1 holds its keys" 3000 "$("$AMQ" query -c o1.amq k1)"
expect_status 0 "$AMQ" import --from redis --shards 3 - p0.amq p1.amq p2.amq <out.resp
expect_same_file o2.amq p2.amq
expect_status 2 "$AMQ" import --from redis --shards 3 out.resp o0.amq o1.amq o2.amq
expect_stderr_has 'exists'
expect_status 0 "$AMQ" import --from redis --shards 3 --force out.resp o0.amq o1.amq o2.amq

CASE=export-refusals
expect_status 2 "$AMQ" export --to redis --shards 0 f s0.amq
expect_stderr_has 'number of shards in [1, 1024]'
expect_status 2 "$AMQ" export --to redis --shards 1025 f s0.amq
expect_status 2 "$AMQ" export --to redis --shards 3 f s0.amq s1.amq
expect_stderr_has 'expected NAME, 3 filter files'
expect_status 2 "$AMQ" export --to redis --shards 2 'a{b}' s0.amq s1.amq
expect_stderr_has "without '{' or '}'"
expect_status 2 "$AMQ" export --to redis --shards 2 f s0.amq c.amq x.resp
expect_stderr_has 'must be of one family'
[ ! -e x.resp ] || fail "a refused export left its output"
expect_status 2 "$AMQ" export --to redis --shards 2 f s0.amq b.amq x.resp
expect_stderr_has 'shard 1: a filter with no RedisBloom form'
expect_status 2 "$AMQ" export --to redis --shards 2 f s0.amq s1.amq out.resp
expect_stderr_has 'exists'
expect_status 0 "$AMQ" export --to redis --shards 2 f c.amq c.amq cc.resp
tr -d '\r' <cc.resp | grep -q '"backend": "cf"' || fail "a cuckoo export's backend"

CASE=import-refusals
expect_status 2 "$AMQ" import --from redis --shards 4 out.resp q0 q1 q2 q3
expect_stderr_has 'says 3 shards, not 4'
[ ! -e q0 ] || fail "a refused import wrote a file"
expect_status 2 "$AMQ" import --from redis --shards 2 out.resp q0 q1
expect_stderr_has "key 'users:seen:{2.0}.amq-load' is not a shard key NAME:{i.j} with i < 2"
# A shard missing: two shards' stream without its metadata, read as three shards.
"$AMQ" export --to redis --shards 2 h s0.amq s1.amq h.resp || fail "export h"
set_at=$(grep -abo 'SET' h.resp | tail -n 1 | cut -d: -f1)
head -c "$((set_at - 8))" h.resp >nometa.resp
expect_status 2 "$AMQ" import --from redis --shards 3 nometa.resp q0 q1 q2
expect_stderr_has 'no chunk of shard 2 (key h:{2.*})'
[ ! -e q0 ] || fail "an import with a shard missing wrote a file"
expect_status 0 "$AMQ" import --from redis --shards 2 nometa.resp q0 q1
rm -f q0 q1
# A stream of one key, not a shard key.
"$AMQ" export --to redis f1 s0.amq one.resp || fail "one-key export"
expect_status 2 "$AMQ" import --from redis --shards 1 one.resp q0
expect_stderr_has "is not a shard key NAME:{i.j}"
"$AMQ" export --to redis --shards 2 g s0.amq s1.amq two.resp || fail "export g"
head -c "$(($(wc -c <two.resp) - 40))" two.resp >cut.resp
expect_status 2 "$AMQ" import --from redis --shards 2 cut.resp q0 q1
expect_stderr_has 'byte '
[ ! -e q0 ] && [ ! -e q1 ] || fail "a cut stream wrote files"
printf '*2\r\n:1\r\n$3\r\nabc\r\n' >scan.resp
expect_status 2 "$AMQ" import --from redis --shards 2 scan.resp q0 q1
expect_stderr_has 'a SCANDUMP reply names no key'
cat out.resp two.resp >mixed.resp
expect_status 2 "$AMQ" import --from redis --shards 3 mixed.resp q0 q1 q2
expect_stderr_has 'is not of filter'
expect_status 0 "$AMQ" export --help
grep -q . "$T/.out" || fail "export --help printed nothing"

finish
