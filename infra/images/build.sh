#!/usr/bin/env bash
# Builds choreo's images without any registry:
#   local/debian:bookworm  the base (infra/images/base/build.sh: debootstrap + docker import)
#   local/choreo:dev       the services (the host's node binary and node_modules)
#   local/nats:2.9         Debian's nats-server
#   local/redis:7          Debian's redis-server
#   local/haproxy:2.6      Debian's haproxy (docker-compose.ha.yml)
#   local/prometheus:2.42  Debian's prometheus (the monitoring profile; built only when named)
# Usage: infra/images/build.sh [choreo|nats|redis|haproxy|prometheus ...]   (default: all but prometheus)
#   CHOREO_BASE_IMAGE=node:20-bookworm-slim infra/images/build.sh   where a registry is reachable
# Idempotent: docker's layer cache makes a rebuild of unchanged sources take
# seconds; quiet unless an image changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
base=${CHOREO_BASE_IMAGE:-local/debian:bookworm}
export DOCKER_BUILDKIT=0 # docker.io 20.10 has no buildx: the legacy builder

if ! docker info >/dev/null 2>&1; then
  echo "choreo: no Docker engine answers (scripts/ensure-docker.sh starts one)" >&2
  exit 1
fi

if [[ $base == local/debian:bookworm ]]; then bash "$here/base/build.sh" "$base"; fi

images=("$@")
((${#images[@]})) || images=(choreo nats redis haproxy)

image_id() { docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

build() { # name tag context
  local name=$1 tag=$2 context=$3 before after started out
  before=$(image_id "$tag")
  started=${EPOCHREALTIME/./}
  if ! out=$(docker build --build-arg "BASE=$base" -f "$here/$name/Dockerfile" -t "$tag" "$context" 2>&1); then
    printf '%s\n' "$out" | tail -n 30 >&2
    echo "choreo: building $tag failed" >&2
    return 1
  fi
  after=$(image_id "$tag")
  if [[ $before != "$after" ]]; then
    local ms=$(((${EPOCHREALTIME/./} - started) / 1000))
    printf 'choreo: built %s in %d.%d s\n' "$tag" $((ms / 1000)) $((ms % 1000 / 100)) >&2
    # The previous build of this tag is now dangling: drop it (not when a container uses it).
    if [[ -n $before ]]; then docker image rm "$before" >/dev/null 2>&1 || true; fi
  fi
}

stage_node() {
  # The base's own node wins (node:20-bookworm-slim); otherwise the host's binary.
  local dir=$here/choreo/.host
  mkdir -p "$dir"
  touch "$dir/.keep"
  if docker run --rm --network none --entrypoint sh "$base" -c 'command -v node' >/dev/null 2>&1; then
    rm -f "$dir/node"
    return
  fi
  local node
  node=$(command -v node)
  node=$(readlink -f "$node")
  if ! cmp -s "$node" "$dir/node"; then cp "$node" "$dir/node.tmp" && mv "$dir/node.tmp" "$dir/node"; fi
}

for img in "${images[@]}"; do
  case $img in
    choreo)
      if [[ ! -d $repo/node_modules ]]; then
        echo "choreo: $repo/node_modules is missing (npm install, or scripts/ensure-deps.sh)" >&2
        exit 1
      fi
      stage_node
      build choreo local/choreo:dev "$repo"
      ;;
    nats) build nats local/nats:2.9 "$here/nats" ;;
    redis) build redis local/redis:7 "$here/redis" ;;
    haproxy) build haproxy local/haproxy:2.6 "$here/haproxy" ;;
    prometheus) build prometheus local/prometheus:2.42 "$here/prometheus" ;;
    *) echo "choreo: unknown image $img (choreo, nats, redis, haproxy, prometheus)" >&2; exit 2 ;;
  esac
done
