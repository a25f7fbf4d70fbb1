#!/usr/bin/env bash
# The cluster as containers (docker-compose.yml), built and started offline:
# starts dockerd if needed, builds the images (infra/images/build.sh),
# prepares the host, `docker-compose up -d`, waits for the api's health and
# writes .choreo/compose/kubeconfig (https, the api's CA, the admin token).
#   COMPOSE_PROJECT_NAME (default choreo); CHOREO_COMPOSE_HTTPS_PORT (6443) …
#   CHOREO_COMPOSE_HA=1: with docker-compose.ha.yml (3 NATS, Redis with Sentinels, 3 api
#   replicas behind HAProxy on CHOREO_COMPOSE_HA_HTTPS_PORT (6443) / _HTTP_PORT (8080) / _GRPC_PORT (9090))
set -euo pipefail
cd "$(dirname "$0")/.."
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-choreo}
https_port=${CHOREO_COMPOSE_HTTPS_PORT:-6443}
http_port=${CHOREO_COMPOSE_HTTP_PORT:-8080}
if [[ ${CHOREO_COMPOSE_HA:-} == 1 ]]; then
  export COMPOSE_FILE=docker-compose.yml:docker-compose.ha.yml
  # The first api's own ports: random (HAProxy publishes the cluster's).
  export CHOREO_COMPOSE_HTTPS_PORT=${CHOREO_COMPOSE_HTTPS_PORT:-0} CHOREO_COMPOSE_HTTP_PORT=${CHOREO_COMPOSE_HTTP_PORT:-0}
  https_port=${CHOREO_COMPOSE_HA_HTTPS_PORT:-6443}
  http_port=${CHOREO_COMPOSE_HA_HTTP_PORT:-8080}
fi

bash scripts/ensure-docker.sh
bash infra/images/build.sh
bash scripts/compose-host.sh
docker-compose up -d --no-build

api=$(docker-compose ps -q api)
for i in $(seq 1 120); do
  health=$(docker inspect --format '{{.State.Health.Status}}' "$api")
  [[ $health == healthy ]] && break
  if ((i == 120)); then
    docker-compose logs --tail 30 api >&2
    echo "choreo: the api is not healthy after 60 s" >&2
    exit 1
  fi
  sleep 0.5
done

dir=.choreo/compose
mkdir -p "$dir"
token=$(docker-compose exec -T api sh -c "grep -v '^#' /data/tokens | head -n 1")
ca=$(docker-compose exec -T api cat /data/pki/apiserver.crt | base64 -w0)
umask 077
cat >"$dir/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: choreo-compose
  cluster:
    server: https://127.0.0.1:$https_port
    certificate-authority-data: $ca
users:
- name: choreo-admin
  user:
    token: $token
contexts:
- name: choreo-compose
  context:
    cluster: choreo-compose
    user: choreo-admin
    namespace: default
current-context: choreo-compose
YAML
cat <<MSG
choreo (compose project $COMPOSE_PROJECT_NAME) is up
  https:      https://127.0.0.1:$https_port
  http:       http://127.0.0.1:$http_port
  kubeconfig: $PWD/$dir/kubeconfig
  export KUBECONFIG=$PWD/$dir/kubeconfig; kubectl get nodes
  stop:       bash scripts/compose-down.sh
MSG
