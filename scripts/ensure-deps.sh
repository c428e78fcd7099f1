#!/bin/sh
# ensure-deps.sh PKG... - installs the Debian packages that are missing,
# non-interactively, and only those.  Does nothing when all are present.
missing=""
for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "installing missing Debian packages:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
        echo "error: need root (or sudo) to install:$missing" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q --no-install-recommends $missing; then
    $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends $missing || {
        echo "error: could not install:$missing" >&2
        exit 1
    }
fi
