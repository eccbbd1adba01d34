#!/usr/bin/env bash
# `make llama-server`: builds llama.cpp's own server from the llama.cpp tree vendored in the
# llama-cpp-python source distribution the `local` extra pins (downloaded from PyPI, its SHA-256
# checked), with the flags the extra is built with (scripts/cmake_args.sh), and installs it as
# <models dir>/engines/llama-server, where `models serve --engine llama-server` and
# HELMDECK_LOCAL_ENGINE=llama-server find it. llama.cpp is MIT-licensed. About 10 minutes on 2 cores;
# a binary already there is kept (FORCE=1 builds again).
#
# For measuring build choices (issue 54, item 3; not the product's build): DEST=DIR installs there,
# CMAKE_EXTRA adds cmake flags, LLAMA_PORTABLE=1 leaves out the AVX-512 ones, and TARGETS builds more
# of llama.cpp's programs beside the server (e.g. "llama-server llama-quantize").
set -euo pipefail
VERSION=0.3.36
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
PY=${PY:-.venv/bin/python}
DEST=${DEST:-$($PY -c 'from helmdeck_dspy.local.registry import models_dir; print(models_dir() / "engines")')}
TARGETS=${TARGETS:-llama-server}
if [ -x "$DEST/llama-server" ] && [ -z "${FORCE:-}" ]; then
  echo "$DEST/llama-server is there ($("$DEST/llama-server" --version 2>&1 | grep '^version' || true)); FORCE=1 builds it again"
  exit 0
fi
for tool in cmake c++ tar sha256sum; do
  command -v "$tool" > /dev/null || { echo "building llama-server needs $tool"; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
$PY -m pip download --disable-pip-version-check --quiet --no-binary :all: --no-deps \
  "llama-cpp-python==$VERSION" -d "$WORK"
echo "$SHA256  $WORK/llama_cpp_python-$VERSION.tar.gz" | sha256sum --check --quiet -
tar xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
# shellcheck disable=SC2046
cmake -S "$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
  $(bash "$(dirname "$0")/cmake_args.sh") -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON ${CMAKE_EXTRA:-} > "$WORK/cmake.log" \
  || { tail -n 20 "$WORK/cmake.log"; exit 1; }
echo "building $TARGETS (log: $WORK/build.log) ..."
# shellcheck disable=SC2086
cmake --build "$WORK/build" --target $TARGETS -j "$(nproc)" > "$WORK/build.log" 2>&1 \
  || { tail -n 30 "$WORK/build.log"; exit 1; }
mkdir -p "$DEST"
for target in $TARGETS; do
  install -m 0755 "$WORK/build/bin/$target" "$DEST/$target.partial"
  mv -f "$DEST/$target.partial" "$DEST/$target"
done
echo "installed $DEST/llama-server: $("$DEST/llama-server" --version 2>&1 | grep '^version' || true)"
