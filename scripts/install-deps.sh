#!/usr/bin/env bash
# Installs pocket's build and test dependencies from Debian's packages (only those missing).
# Usage: scripts/install-deps.sh [--all]   (--all adds the training, cross-compilation and fuzzing tools)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      googletest libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libcli11-dev libxxhash-dev libzstd-dev libpcre2-dev libutf8proc-dev
      # pocket serve: the HTTP library (and curl for its tests)
      libcpp-httplib-dev curl)
if [ "${1:-}" = "--all" ]; then
  pkgs+=(clang libclang-rt-14-dev g++-aarch64-linux-gnu qemu-user-static
         libtorch-dev libgloo-dev libopenblas0-pthread gnuplot-nox
         # arm64 multiarch libraries for the aarch64 model tests (scripts/test-aarch64.sh)
         libzstd-dev:arm64 libxxhash-dev:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64)
fi
# The server's client test drives it with the openai npm package: Node.js and npm from Debian, unless a
# Node.js with its npm is already installed (NodeSource's nodejs bundles npm and conflicts with Debian's npm).
if [ "${1:-}" = "--all" ] && { ! command -v node >/dev/null || ! command -v npm >/dev/null; }; then
  pkgs+=(nodejs npm)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
for p in "${missing[@]}"; do
  if [[ "$p" == *:arm64 ]] && [[ " $(dpkg --print-foreign-architectures | tr '\n' ' ') " != *" arm64 "* ]]; then
    $sudo dpkg --add-architecture arm64
  fi
done
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
