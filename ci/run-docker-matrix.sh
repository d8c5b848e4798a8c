#!/usr/bin/env bash
# The Kafka version matrix on a machine with Docker, as ci/workflows/kafka-matrix.yml runs it per job:
#   bash ci/run-docker-matrix.sh            # every version of DockerTarget's DEFAULT_MATRIX
#   bash ci/run-docker-matrix.sh 3.9 4.1    # only these
# Logs of a Kafka that did not start go to $KCONFORM_DOCKER_LOGS (default ./docker-logs).
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
export KCONFORM_DOCKER_LOGS=${KCONFORM_DOCKER_LOGS:-$PWD/docker-logs}
if [ $# -gt 0 ]; then
  versions=("$@")
else
  read -r -a versions <<<"$("$python" -c \
    'from kconform.harness.targets.docker_target import DEFAULT_MATRIX; print(*DEFAULT_MATRIX)')"
fi
failed=()
for version in "${versions[@]}"; do
  echo "=== Kafka $version"
  if ! "$python" ci/docker-smoke.py "$version" \
    || ! "$python" -m pytest suites/conformance --kafka-target "docker:$version" -q; then
    failed+=("$version")
  fi
done
"$python" -c 'from kconform.harness.targets.docker_target import cleanup_stale; cleanup_stale()' || true
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed: ${failed[*]} (logs, if any, in $KCONFORM_DOCKER_LOGS)" >&2
  exit 1
fi
echo "all passed: ${versions[*]}"
