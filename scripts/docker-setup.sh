#!/usr/bin/env bash
# Make `docker build` of the action image possible on a machine with no Docker registry:
# start dockerd if needed, create debian:bookworm-slim with debootstrap, build the image.
#   scripts/docker-setup.sh [IMAGE_TAG [PLATFORM]]   (as root; needs docker.io and debootstrap)
# PLATFORM linux/arm64 builds the arm64 image under qemu (qemu-user-static's binfmt handler
# with the F flag) from an arm64 base made the same way, tagged debian:bookworm-slim-arm64.
set -euo pipefail
TAG="${1:-gbft-action:test}"
PLATFORM="${2:-}"
ARCH=""
BASE=debian:bookworm-slim
if [ "$PLATFORM" = linux/arm64 ]; then ARCH=arm64; BASE=debian:bookworm-slim-arm64; fi
# Debian's docker.io client has BuildKit built in; a newer client elsewhere on PATH may want buildx.
DOCKER=docker
[ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

if ! docker info >/dev/null 2>&1; then
    command -v dockerd >/dev/null || { echo "docker-setup: dockerd not installed (apt-get install docker.io)" >&2; exit 3; }
    (dockerd >/tmp/gbft-dockerd.log 2>&1 &)
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { echo "docker-setup: dockerd did not start (see /tmp/gbft-dockerd.log)" >&2; exit 3; }
fi

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { echo "docker-setup: debootstrap not installed" >&2; exit 3; }
    # The mirror the host's apt uses (deb822 "URIs:" or one-line "deb" entries, comments skipped).
    mirror="$(grep -rhE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
              /etc/apt/sources.list.d/*.list 2>/dev/null | grep -oE 'https?://[^ ]+/debian/?$' | head -1 || true)"
    mirror="${mirror:-http://deb.debian.org/debian}"
    dir="$(mktemp -d /tmp/gbft-bookworm.XXXX)"
    debootstrap --variant=minbase ${ARCH:+--arch=$ARCH} bookworm "$dir" ${mirror:+"$mirror"} >/tmp/gbft-debootstrap.log 2>&1
    # The image's apt must reach the same mirror the host uses.
    if [ -n "$mirror" ]; then echo "deb $mirror bookworm main" > "$dir/etc/apt/sources.list"; fi
    if [ -z "$PLATFORM" ]; then
        tar -C "$dir" -c . | docker import - "$BASE" >/dev/null
    else
        # `docker import --platform` needs an experimental daemon (without, the image says amd64
        # and BuildKit then looks for the arm64 base in a registry): FROM scratch takes the platform.
        ctx="$(mktemp -d /tmp/gbft-base-ctx.XXXX)"
        tar -C "$dir" -cf "$ctx/rootfs.tar" .
        printf 'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n' > "$ctx/Dockerfile"
        DOCKER_BUILDKIT=1 "$DOCKER" build --platform "$PLATFORM" -t "$BASE" "$ctx" >/tmp/gbft-base-build.log 2>&1 \
            || { tail -20 /tmp/gbft-base-build.log >&2; exit 1; }
        rm -rf "$ctx"
    fi
    rm -rf "$dir"
fi

CA=/etc/ssl/certs/ca-certificates.crt
SECRET=()
[ -s "$CA" ] && SECRET=(--secret "id=ca,src=$CA")
LOG=/tmp/gbft-docker-build${ARCH:+-$ARCH}.log
DOCKER_BUILDKIT=1 "$DOCKER" build --network host "${SECRET[@]}" ${PLATFORM:+--platform "$PLATFORM"} \
    --build-arg "BASE=$BASE" -t "$TAG" "$ROOT" >"$LOG" 2>&1 || { tail -30 "$LOG" >&2; exit 1; }
echo "$TAG"
