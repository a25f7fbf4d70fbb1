#!/usr/bin/env bash
# Starts the Docker engine when docker.io is installed but not running (a
# fresh machine has no init system starting it): dockerd in the background,
# logging to /var/log/choreo-dockerd.log, then waits up to 30 s for
# `docker info`. Quiet when Docker already answers or is not installed.
# Exit status: 0 when Docker answers (or is not installed), 1 otherwise.
set -euo pipefail

command -v dockerd >/dev/null || exit 0
docker info >/dev/null 2>&1 && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "choreo: the Docker engine is not running (start dockerd as root)" >&2
  exit 1
fi

log=/var/log/choreo-dockerd.log
[[ -w /var/log ]] || log=/tmp/choreo-dockerd.log
if ! pgrep -x dockerd >/dev/null; then
  echo "choreo: starting dockerd (log: $log)" >&2
  # Its own session: Ctrl-C on `npm start` or the end of a CI step must not stop it.
  setsid nohup dockerd >>"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 0.5
done
echo "choreo: dockerd did not answer within 30 s; last lines of $log:" >&2
tail -n 15 "$log" >&2 || true
exit 1
