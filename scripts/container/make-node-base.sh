#!/usr/bin/env bash
# Builds a local stand-in for docker.io/library/node:20-bookworm-slim, for machines that reach
# Debian's archive and the npm registry but no image registry: a Debian bookworm minbase
# (mmdebstrap, from the mirrors the host's apt uses) slimmed like debian:bookworm-slim, this
# machine's Node 20 binary, headers and corepack under /usr/local (where the official image keeps
# them), npm from the npm registry (NPM_VERSION, what Node 20's tarball bundles) and a `node` user
# and group with uid/gid 1000. Run as root. Where a registry is reachable, use the real image
# instead (the Dockerfile's NODE_IMAGE build argument pins it by digest).
#
# Unlike the official image nothing here sets NODE_EXTRA_CA_CERTS: a build behind a TLS-inspecting
# proxy passes the host's CA bundle as the build secret npm_ca (see the Dockerfile), so the
# setting never reaches the runtime image.
set -euo pipefail
WORK=${WORK:-${TMPDIR:-/tmp}/changefeed-node-base}
TAG=${TAG:-docker.io/library/node:20-bookworm-slim}
NPM_VERSION=${NPM_VERSION:-10.8.2}
R=$WORK/rootfs

node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || { echo "make-node-base: this machine's node is $(node --version), the image needs Node 20" >&2; exit 1; }

# The mirrors apt uses on this host (deb822 .sources or classic .list files), for the base as well.
mapfile -t MIRRORS < <({ awk '/^URIs:/{print $2}' /etc/apt/sources.list.d/*.sources; awk '/^deb /{print $2}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list; } 2>/dev/null)
MAIN=$(printf '%s\n' "${MIRRORS[@]}" | grep -v security | head -1 || true)
SEC=$(printf '%s\n' "${MIRRORS[@]}" | grep security | head -1 || true)
[ -n "$MAIN" ] || { echo "make-node-base: no Debian mirror in the host's apt sources" >&2; exit 1; }
SOURCES=("deb $MAIN bookworm main" "deb $MAIN bookworm-updates main")
[ -n "$SEC" ] && SOURCES+=("deb $SEC bookworm-security main")

mkdir -p "$WORK"
rm -rf "$R"
trap 'rm -rf "$R"' EXIT
mmdebstrap --quiet --variant=minbase --mode=root --format=directory --include=usr-is-merged \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  bookworm "$R" "${SOURCES[@]}"
# mmdebstrap 1.3.5 pulls in usrmerge (and with it perl); debian:bookworm-slim has neither.
chroot "$R" apt-get purge -y -q --auto-remove usrmerge >/dev/null
chroot "$R" dpkg --purge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl perl libperl5.36 perl-modules-5.36 >/dev/null
chroot "$R" sh -c 'apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log'
: >"$R/etc/resolv.conf"
echo localhost >"$R/etc/hostname"

# Node 20 as in the official image: /usr/local/{bin,include/node,lib/node_modules}.
NODE_BIN=$(readlink -f "$(command -v node)")
NODE_PREFIX=$(dirname "$(dirname "$NODE_BIN")")
install -D -m 0755 "$NODE_BIN" "$R/usr/local/bin/node"
mkdir -p "$R/usr/local/include" "$R/usr/local/lib/node_modules/npm"
cp -a "$NODE_PREFIX/include/node" "$R/usr/local/include/node"
cp -a "$NODE_PREFIX/lib/node_modules/corepack" "$R/usr/local/lib/node_modules/corepack"
(cd "$WORK" && rm -f npm-*.tgz && npm pack "npm@$NPM_VERSION" --silent >/dev/null)
tar -xzf "$WORK/npm-$NPM_VERSION.tgz" -C "$R/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$R/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$R/usr/local/bin/npx"
ln -sf ../lib/node_modules/corepack/dist/corepack.js "$R/usr/local/bin/corepack"
ln -sf node "$R/usr/local/bin/nodejs"
chroot "$R" sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'

NODE_VERSION=$("$NODE_BIN" --version)
tar --numeric-owner -C "$R" -cf - . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${NODE_VERSION#v}" --change 'CMD ["node"]' \
  --message "stand-in for node:20-bookworm-slim (mmdebstrap bookworm minbase + node $NODE_VERSION + npm $NPM_VERSION)" \
  - "$TAG" >/dev/null
podman run --rm --network=none "$TAG" sh -c \
  'echo "node $(node --version), npm $(npm --version), $(id node)" && test -f /usr/local/include/node/node_api.h'
