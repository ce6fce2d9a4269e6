#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deps.sh - install the system packages patc needs to build and test, if any
# is missing.  Idempotent: does nothing (and needs no network) when all are
# installed.  Debian 12 (bookworm); needs root or sudo to install.
#
#   scripts/deps.sh           what make demo, make test and make install need
#   scripts/deps.sh --bench   and the sparse baselines of make bench too
set -euo pipefail

bench_packages=(
	libeigen3-dev librsb-dev         # the sparse baselines of make bench (cpu_bench)
)

packages=(
	cmake make gcc g++ pkg-config python3
	flex bison                       # the .pat front end
	check libsubunit-dev             # unit tests (Check under CTest)
	libcjson-dev                     # safetensors headers
	libopenblas-dev                  # output-error metric, dense baselines
	llvm-19-dev libzstd-dev zlib1g-dev   # code generation through the LLVM C API
	clang-19 libclang-rt-19-dev      # libFuzzer targets
)

case "${1:-}" in
	"") ;;
	--bench) packages+=("${bench_packages[@]}") ;;
	*) echo "usage: scripts/deps.sh [--bench]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps.sh: need root (or sudo) to install: ${missing[*]}" >&2; exit 3; }
	sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
