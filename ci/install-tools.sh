#!/usr/bin/env bash
# Debian packages the live suites use: kcat (a real librdkafka client), tshark (Wireshark's Kafka
# dissector, an independent oracle for what goes over the wire), chromium (renders the report
# dashboard headless in its test), and Go with Debian's sarama source package (a Go client, built in
# GOPATH mode); and kafkajs from npm (a Node.js client). Installs only what is missing.
set -euo pipefail
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v go >/dev/null 2>&1 || missing+=(golang-go)
[ -d /usr/share/gocode/src/github.com/Shopify/sarama ] || missing+=(golang-github-shopify-sarama-dev)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
kafkajs_home="${KCONFORM_KAFKAJS_HOME:-$HOME/.cache/kconform/kafkajs}"
if [ ! -d "$kafkajs_home/node_modules/kafkajs" ]; then
  mkdir -p "$kafkajs_home"
  npm install --silent --prefix "$kafkajs_home" kafkajs@2 >/dev/null
fi
