#!/bin/sh
# build-servers.sh [redis|valkey]... - builds the test servers Redis 8.0.2 and Valkey 8.1.1 from
# Debian 13 (trixie) source packages, once per machine.
#
# The upstream tarball comes from Debian's archive through apt, with a sources list and package
# lists of our own (the system's apt configuration is neither read nor changed), and is checked
# against the SHA-256 that the signed Sources index gives.  It is built with
# `make MALLOC=libc BUILD_TLS=no` and installed into the cache:
#
#   ${AMQ_SERVERS_CACHE:-/var/cache/amq-servers}/redis-8.0.2/bin/redis-server
#   ${AMQ_SERVERS_CACHE:-/var/cache/amq-servers}/valkey-8.1.1/bin/valkey-server
#
# A server already in the cache is not rebuilt (delete its directory to force it).  Concurrent
# runs wait for each other (flock).  Prints one line per server: NAME VERSION PATH.
set -eu

CACHE=${AMQ_SERVERS_CACHE:-/var/cache/amq-servers}
MIRROR=${AMQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
JOBS=${AMQ_SERVERS_JOBS:-2}
HERE=$(cd "$(dirname "$0")" && pwd)

# name upstream-version binary-prefix
SERVERS="redis 8.0.2 redis
valkey 8.1.1 valkey"

want=${*:-redis valkey}

die() { echo "build-servers: error: $*" >&2; exit 1; }

# Only the compiler toolchain is needed: MALLOC=libc and BUILD_TLS=no leave out jemalloc and
# OpenSSL, and Lua, hiredis and the rest are vendored in the tarballs.  Redis 8 has C++ (fast_float).
"$HERE/ensure-deps.sh" gcc g++ make pkg-config xz-utils ca-certificates util-linux >&2 ||
    die "could not install the build tools"

mkdir -p "$CACHE" || die "cannot create the cache directory $CACHE (set AMQ_SERVERS_CACHE)"
exec 9>"$CACHE/.lock"
flock 9

APTDIR="$CACHE/apt"
apt_opts() {
    # Dir::Etc::sourceparts=- : no sources.list.d; our own lists and archive directories.
    echo "-o Dir::Etc::sourcelist=$APTDIR/sources.list -o Dir::Etc::sourceparts=- \
-o Dir::State::Lists=$APTDIR/lists -o Dir::Cache=$APTDIR/cache -o APT::Get::List-Cleanup=0 \
-o Debug::NoLocking=1"
}

apt_ready=0
apt_update() {
    [ "$apt_ready" = 1 ] && return 0
    mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/src"
    printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s trixie main\n' \
        "$MIRROR" > "$APTDIR/sources.list"
    # shellcheck disable=SC2046
    apt-get -q $(apt_opts) update >&2 || die "apt-get update with $APTDIR/sources.list failed"
    # apt only warns when the mirror cannot be reached.
    ls "$APTDIR/lists/"*trixie*Sources* >/dev/null 2>&1 ||
        die "could not download trixie's source index from $MIRROR (no network?)"
    apt_ready=1
}

# Field $2 of the source stanza for package $1 at Debian version $3 (first line only).
showsrc() {
    # shellcheck disable=SC2046
    apt-cache $(apt_opts) showsrc "$1" 2>/dev/null
}

build_one() {
    name=$1 upver=$2 bin=$3
    dest="$CACHE/$name-$upver"
    if [ -x "$dest/bin/$bin-server" ] && [ -f "$dest/.complete" ]; then
        echo "$name $upver $dest/bin/$bin-server"
        return 0
    fi
    apt_update
    # The trixie version of this upstream release (e.g. 5:8.0.2-3+deb13u3, 8.1.1+dfsg1-3+deb13u3).
    debver=$(showsrc "$name" | sed -n 's/^Version: //p' |
        grep -E "^([0-9]+:)?$upver([+~][^-]*)?-" | head -n 1)
    [ -n "$debver" ] || die "trixie has no source package $name at upstream version $upver"
    stanza=$(showsrc "$name" | awk -v v="$debver" '
        /^Package: /{ p = 0 } /^Version: /{ p = ($2 == v) } p')
    # The orig tarball's name and checksum, from the stanza's Checksums-Sha256 list.
    orig=$(printf '%s\n' "$stanza" | awk '/^Checksums-Sha256:/{ s = 1; next } /^[^ ]/{ s = 0 }
        s && $3 ~ /\.orig\.tar\./{ print $1, $3; exit }')
    [ -n "$orig" ] || die "no orig tarball listed for $name $debver"
    sum=${orig% *} file=${orig#* }
    src="$APTDIR/src"
    if ! [ -f "$src/$file" ] || ! echo "$sum  $src/$file" | sha256sum -c --status; then
        rm -f "$src/$file"
        echo "build-servers: fetching $name=$debver source" >&2
        # Only the upstream tarball is used; some mirrors lack the .dsc of a point release, so
        # apt's status is not trusted either way: the checksum below decides.
        # shellcheck disable=SC2046
        (cd "$src" && apt-get -q $(apt_opts) source --download-only "$name=$debver" >&2) || true
        [ -f "$src/$file" ] || die "apt-get source did not fetch $file"
        echo "$sum  $src/$file" | sha256sum -c --status || die "$file: SHA-256 mismatch"
    fi
    work="$CACHE/.build-$name-$upver"
    rm -rf "$work" "$dest.tmp"
    mkdir -p "$work"
    tar -xf "$src/$file" -C "$work"
    top=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    [ -n "$top" ] && [ -f "$top/Makefile" ] || die "$file: no source tree with a Makefile"
    echo "build-servers: building $name $upver (make -j$JOBS MALLOC=libc BUILD_TLS=no)" >&2
    start=$(date +%s)
    # Servers' own makefiles read CFLAGS etc. from the environment: start from a clean one
    # (and not our make's jobserver: their -j is $JOBS).
    (cd "$top" && env -u CFLAGS -u LDFLAGS -u CPPFLAGS -u CC -u CXX -u MAKEFLAGS -u MFLAGS \
        -u MAKELEVEL nice make -j"$JOBS" MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no \
        >"$work/build.log" 2>&1 &&
        env -u CFLAGS -u LDFLAGS -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
            make PREFIX="$dest.tmp" MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no \
            install >>"$work/build.log" 2>&1) || {
        tail -n 40 "$work/build.log" >&2
        die "building $name $upver failed (log: $work/build.log)"
    }
    "$dest.tmp/bin/$bin-server" --version >&2 || die "the built $bin-server does not run"
    printf '%s %s %s seconds=%s\n' "$name" "$debver" "$file" "$(( $(date +%s) - start ))" \
        > "$dest.tmp/.complete"
    rm -rf "$dest"
    mv "$dest.tmp" "$dest"
    rm -rf "$work"
    echo "$name $upver $dest/bin/$bin-server"
}

for w in $want; do
    line=$(printf '%s\n' "$SERVERS" | awk -v n="$w" '$1 == n')
    [ -n "$line" ] || die "unknown server '$w' (known: redis valkey)"
    # shellcheck disable=SC2086
    build_one $line
done
