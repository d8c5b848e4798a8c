#!/usr/bin/env bash
# Debian packages the live suites use: kcat (a real librdkafka client), tshark (Wireshark's Kafka
# dissector, an independent oracle for what goes over the wire) and chromium (renders the report
# dashboard headless in its test). Installs only what is missing.
set -euo pipefail
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
