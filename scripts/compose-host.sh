#!/usr/bin/env bash
# Prepares this host for docker-compose.yml's node agents: /var/lib/choreo
# and /run/netns as shared mounts (the agents bind both with :rshared, so
# pods' bind mounts and the binds an agent makes there resolve on the host;
# Docker refuses :rshared on a private one). `ip netns add` does the same the first time it runs. Idempotent, quiet.
set -euo pipefail
mkdir -p /var/lib/choreo /run/netns
if ! mountpoint -q /run/netns; then
  mount --bind /run/netns /run/netns
fi
if [[ $(findmnt -n -o PROPAGATION /run/netns) != shared ]]; then
  mount --make-shared /run/netns
fi
if ! mountpoint -q /var/lib/choreo; then
  mount --bind /var/lib/choreo /var/lib/choreo
fi
if [[ $(findmnt -n -o PROPAGATION /var/lib/choreo) != shared ]]; then
  mount --make-shared /var/lib/choreo
fi
