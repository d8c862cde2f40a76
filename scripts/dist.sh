#!/usr/bin/env bash
# dist.sh OUTDIR OS/ARCH... writes release archives of the cachebook binary,
# for learners who want the server without a Go toolchain: one
# cachebook-OS-ARCH.tar.gz per platform (.zip for Windows) holding the binary,
# README.md and a LICENSE if there is one, and OUTDIR/SHA256SUMS over them.
# Run it through `make dist`, which builds the embedded WebAssembly engine
# first. The binaries are static (CGO_ENABLED=0); where GNU tar is at hand
# the archives are reproducible (file times of the last commit, no owners).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
[ $# -ge 2 ] || { echo "usage: $0 OUTDIR OS/ARCH..." >&2; exit 2; }
out=$1
shift
wasm=web/static/dist/cachebook.wasm
[ -s "$wasm" ] || { echo "dist: $wasm is missing (make wasm builds it)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
gnutar=
tar --version 2>/dev/null | grep -q 'GNU tar' && gnutar=1

for p in "$@"; do
  os=${p%/*}
  arch=${p#*/}
  name=cachebook-$os-$arch
  exe=cachebook
  [ "$os" = windows ] && exe=cachebook.exe
  dir=$stage/$name
  mkdir -p "$dir"
  echo "dist: $name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags='-s -w' -o "$dir/$exe" ./cmd/cachebook
  for f in README.md LICENSE LICENSE.md LICENSE.txt; do
    if [ -f "$f" ]; then cp "$f" "$dir/"; fi
  done
  if [ -n "$gnutar" ]; then
    find "$dir" -exec touch -h -d "@$epoch" {} +
  fi
  if [ "$os" = windows ]; then
    if command -v zip >/dev/null 2>&1; then
      (cd "$stage" && zip -q -X -r "$out/$name.zip" "$name")
    else
      (cd "$stage" && python3 -m zipfile -c "$out/$name.zip" "$name")
    fi
  elif [ -n "$gnutar" ]; then
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz"
  else
    tar -C "$stage" -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz"
  fi
done

cd "$out"
if command -v sha256sum >/dev/null 2>&1; then
  sha256sum cachebook-* > SHA256SUMS
else
  shasum -a 256 cachebook-* > SHA256SUMS
fi
ls -l
