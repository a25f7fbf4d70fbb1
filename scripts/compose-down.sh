#!/usr/bin/env bash
# Stops the compose cluster and leaves nothing behind: `docker-compose down
# -v` (containers, network, volumes), then what the node agents made on the
# host — their pods' containers (label dev.choreo.node) and their bridges and
# iptables chains (services/node-agent/src/net/cleanup.ts).
#   COMPOSE_PROJECT_NAME (default choreo)
set -euo pipefail
cd "$(dirname "$0")/.."
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-choreo}
# With or without docker-compose.ha.yml (CHOREO_COMPOSE_HA=1 in compose-up.sh): both files, so its volumes go too.
export COMPOSE_FILE=docker-compose.yml:docker-compose.ha.yml
nodes=(compose-node-1 compose-node-2)

docker-compose down -v --remove-orphans --timeout 20 2>&1 | { grep -v -e '^Removing' -e '^Stopping' -e '^Network .* not found' -e 'Volume .* not found' || true; } >&2
for n in "${nodes[@]}"; do
  ids=$(docker ps -aq --filter "label=dev.choreo.node=$n")
  if [[ -n $ids ]]; then docker rm -f $ids >/dev/null; fi
done
if [[ -f services/node-agent/src/net/cleanup.ts ]]; then
  node --input-type=module --import tsx -e '
    const { cleanupNode } = await import("./services/node-agent/src/net/cleanup.ts");
    for (const n of process.argv.slice(1)) await cleanupNode(n);
  ' "${nodes[@]}" || echo "choreo: could not remove the compose nodes' bridges and chains" >&2
fi
# The agents' binds (safe subPath/hostPath binds, tmpfs emptyDirs) reached the host: `rm -rf` must not descend into them.
for n in "${nodes[@]}"; do
  findmnt -rn -o TARGET | { grep -F "/var/lib/choreo/$n/" || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
done
rm -rf "${nodes[@]/#//var/lib/choreo/}"
rm -f .choreo/compose/kubeconfig
rmdir .choreo/compose 2>/dev/null || true
