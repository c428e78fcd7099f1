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
# params: what BF.RESERVE was given (--fpp 0.01; the first link's 0.005 was written before)
grep -q '"error_rate": 0.01, "expansion": 2}' tail.txt || fail "metadata error_rate: $(cat tail.txt)"
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
expect_stderr_has 'shard 1 is a amq shard, shard 0 a bf shard: the shards must be of one family'
expect_status 2 "$AMQ" export --to redis --shards 2 f s0.amq s1.amq out.resp
expect_stderr_has 'exists'
expect_status 0 "$AMQ" export --to redis --shards 2 f c.amq c.amq cc.resp
tr -d '\r' <cc.resp | grep -q '"backend": "cf"' || fail "a cuckoo export's backend"

CASE=import-refusals
expect_status 2 "$AMQ" import --from redis --shards 4 out.resp q0 q1 q2 q3
expect_stderr_has 'says 3 shards, not 4'
[ ! -e q0 ] || fail "a refused import wrote a file"
# The same metadata written compact (as json.dumps(separators=(",", ":")) writes it).
/usr/bin/python3 - out.resp compact.resp <<'PY'
import json, sys
d = open(sys.argv[1], "rb").read()
at = d.rindex(b"*4\r\n$3\r\nSET\r\n")  # the metadata: SET NAME JSON NX, last
i = at + 13
args = []
for _ in range(2):
    e = d.index(b"\r\n", i)
    n = int(d[i + 1:e])
    args.append(d[e + 2:e + 2 + n])
    i = e + 4 + n
meta = json.dumps(json.loads(args[1]), separators=(",", ":")).encode()
out = d[:at] + b"*4\r\n$3\r\nSET\r\n"
for a in (args[0], meta, b"NX"):
    out += b"$%d\r\n%s\r\n" % (len(a), a)
open(sys.argv[2], "wb").write(out)
PY
grep -q '"shards":3' compact.resp || fail "the compact metadata"
expect_status 2 "$AMQ" import --from redis --shards 4 compact.resp q0 q1 q2 q3
expect_stderr_has 'says 3 shards, not 4'
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
# NAMEs compared by their bytes: "g\0x" is not "g" (a NUL ended the first, once).
printf '*4\r\n$12\r\nBF.LOADCHUNK\r\n$9\r\ng\000x:{0.0}\r\n$1\r\n1\r\n$1\r\nA\r\n' >nul.resp
printf '*4\r\n$12\r\nBF.LOADCHUNK\r\n$7\r\ng:{1.0}\r\n$1\r\n1\r\n$1\r\nB\r\n' >>nul.resp
expect_status 2 "$AMQ" import --from redis --shards 2 nul.resp q0 q1
expect_stderr_has "key 'g:{1.0}' is not of filter"

CASE=amq-shards
# Shards of any kind amq.so's AMQ.* type holds: the files' bytes, back byte for byte.
"$AMQ" build --type blocked b0.amq k0 || fail "build b0"
"$AMQ" build --type blocked b2.amq k2 || fail "build b2"
"$AMQ" build --type ribbon r0.amq k0 || fail "build r0"
"$AMQ" build --type ribbon r1.amq k1 || fail "build r1"
"$AMQ" build --type cuckoo cu.amq k2 || fail "build cu"
expect_status 0 "$AMQ" export --to redis --shards 3 blk b0.amq b.amq b2.amq blk.resp
tr -d '\r' <blk.resp | tail -n 3 | head -n 1 >meta.txt
grep -q '"backend": "amq"' meta.txt || fail "amq backend: $(cat meta.txt)"
grep -q '"kind": "blocked"' meta.txt || fail "amq kind: $(cat meta.txt)"
grep -q '"version": 1}' meta.txt || fail "hash routing is version 1: $(cat meta.txt)"
expect_eq "AMQ.LOADCHUNK per shard" 3 "$(grep -ac '^AMQ.LOADCHUNK' blk.resp)"
expect_status 0 "$AMQ" import --from redis --shards 3 blk.resp ob0 ob1 ob2
expect_same_file b0.amq ob0
expect_same_file b.amq ob1
expect_same_file b2.amq ob2
expect_status 0 "$AMQ" export --to redis --shards 2 st r0.amq r1.amq st.resp
tr -d '\r' <st.resp | grep -q '"kind": "ribbon"' || fail "static shards' kind"
expect_status 0 "$AMQ" import --from redis --shards 2 st.resp or0 or1
expect_same_file r1.amq or1
# Every other kind AMQ.* holds: two shard files out and back, byte for byte.
for kind in cuckoo partitioned fuse aging expandable quotient pocket scalable-bloom; do
    "$AMQ" build --type $kind x0.$kind k0 && "$AMQ" build --type $kind x1.$kind k1 ||
        fail "build $kind"
    expect_status 0 "$AMQ" export --to redis --shards 2 "kinds:$kind" x0.$kind x1.$kind x.resp
    tr -d '\r' <x.resp | grep -q "\"backend\": \"amq\", .*\"kind\": \"$kind\"" ||
        fail "$kind: metadata"
    expect_status 0 "$AMQ" import --from redis --shards 2 x.resp y0.$kind y1.$kind
    expect_same_file x0.$kind y0.$kind
    expect_same_file x1.$kind y1.$kind
    rm -f x.resp
done
# --amq: RedisBloom-form files as AMQ.* shards too.
expect_status 0 "$AMQ" export --to redis --shards 2 --amq sb s0.amq s1.amq sb.resp
tr -d '\r' <sb.resp | grep -q '"backend": "amq", ' || fail "--amq backend"
expect_status 2 "$AMQ" export --to redis --shards 2 mix b0.amq cu.amq x.resp
expect_stderr_has 'shard 1 is a cuckoo filter, shard 0 a blocked filter: the shards of one filter must be of one kind'
[ ! -e x.resp ] || fail "a refused export left its output"
expect_status 2 "$AMQ" import --from redis --shards 2 blk.resp q0 q1
expect_stderr_has "key 'blk:{2.0}.amq-load' is not a shard key NAME:{i.j} with i < 2"

CASE=partition-routing
# One partitioned file of 12 partitions cut into 4 shards of 3 (slices), joined back.
"$AMQ" create --type partitioned --partitions 12 --capacity 9000 pt.amq || fail "create pt"
"$AMQ" add pt.amq k0 k1 k2 || fail "add pt"
expect_status 0 "$AMQ" export --to redis --shards 4 --routing partition pt pt.amq pt.resp
tr -d '\r' <pt.resp | tail -n 3 | head -n 1 >meta.txt
grep -q '"routing": "partition"' meta.txt || fail "routing: $(cat meta.txt)"
grep -q '"partitions": 12, "routing": "partition", "shard_hash": "amq:xxh3", "shard_reduce": "partition", "shard_seed": "0x0000000000000000", "shards": 4, "version": 2}' meta.txt ||
    fail "partition routing fields: $(cat meta.txt)"
grep -q '"first_partition": 9, "kind": "partitioned", "of_partitions": 12, "partitions": 3}' meta.txt ||
    fail "shard 3's slice: $(cat meta.txt)"
expect_status 0 "$AMQ" import --from redis --shards 4 pt.resp whole.amq
expect_same_file pt.amq whole.amq
expect_status 0 "$AMQ" import --from redis --shards 4 pt.resp sl0 sl1 sl2 sl3
expect_stderr_has 'written as slices'
"$AMQ" info --json sl2 >sl2.json
grep -q '"slice_first_partition": 6' sl2.json || fail "slice 2 starts at partition 6: $(cat sl2.json)"
# A slice answers its own keys as the whole file does and "may be present" for the others'
# (a batched query never says "absent" for a key it cannot hold): all 9000 from each.
for i in 0 1 2 3; do
    expect_eq "slice $i: every key maybe" 9000 "$("$AMQ" query -c sl$i k0 k1 k2 2>/dev/null)"
done
# Slices are joined, not merged; a slice refuses the keys of other slices, saying so.
expect_status 2 "$AMQ" merge msl sl0 sl1
expect_stderr_has 'different slices of a filter (a merge ORs the same partitions; slices are joined'
cp sl0 sl0.orig
expect_status 2 "$AMQ" add sl0 k1
expect_stderr_has "a key of this run is not in this slice's partitions (0 to 2 of 12)"
expect_same_file sl0 sl0.orig
expect_status 2 "$AMQ" export --to redis --shards 5 --routing partition pt pt.amq x.resp
expect_stderr_has '12 partitions cannot be cut into 5 shards of equal runs'
expect_status 2 "$AMQ" export --to redis --shards 4 --routing partition pt b.amq x.resp
expect_stderr_has '--routing partition cuts a partitioned filter, not a blocked filter'
expect_status 2 "$AMQ" export --to redis --shards 4 --routing partition pt sl1 x.resp
expect_stderr_has 'already a slice (partitions 3..5 of 12)'
expect_status 2 "$AMQ" export --to redis --shards 4 --routing middle pt pt.amq x.resp
expect_stderr_has "'middle' is not 'hash'"
expect_status 2 "$AMQ" export --to redis --shards 4 pt pt.amq x.resp
expect_stderr_has 'with --routing partition'
[ ! -e x.resp ] || fail "a refused export left its output"
expect_status 2 "$AMQ" import --from redis --shards 3 blk.resp one.amq
expect_stderr_has 'shard 0 is a blocked filter, not a slice of a partitioned filter'
[ ! -e one.amq ] || fail "a refused join wrote a file"
expect_status 2 "$AMQ" import --from redis --shards 2 pt.resp one.amq
expect_stderr_has "is not a shard key NAME:{i.j} with i < 2"
[ ! -e one.amq ] || fail "a refused join wrote a file"
# A shard missing: the stream of shards 0..2 and no metadata, read as 4 shards.
# (its first command, DEL of the staging key, starts 18 bytes before the key)
pt3=$(grep -abo 'pt:{3\.[0-9]*}\.amq-load' pt.resp | head -n 1 | cut -d: -f1)
head -c "$((pt3 - 18))" pt.resp >pt3.resp
expect_status 2 "$AMQ" import --from redis --shards 4 pt3.resp one.amq
expect_stderr_has 'no chunk of shard 3'
[ ! -e one.amq ] || fail "an import with a shard missing wrote a file"

expect_status 0 "$AMQ" export --help
grep -q . "$T/.out" || fail "export --help printed nothing"

finish
