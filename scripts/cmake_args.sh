#!/usr/bin/env bash
# The cmake flags llama.cpp is built with here (the `local` extra's llama-cpp-python, make llama-server):
# GGML_NATIVE=OFF, portable code, which still uses AVX2, FMA, F16C and BMI2; plus each AVX-512 extension
# this CPU reports (AVX512F, VBMI, VNNI, BF16), which doubles prefill on a 2-core AMD EPYC
# (docs/results/engines.md: 172.7 against 91.4 tokens/s; chosen on the MCP dev half,
# experiments/mcp/avx512-check). Never AMX: a native build on a VM that reports AMX crashed here.
# Prints one line; LLAMA_PORTABLE=1 prints the portable flags only.
set -euo pipefail
flags="-DGGML_NATIVE=OFF"
cpu=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $cpu " == *" $1 "* ]]; }
if [ -z "${LLAMA_PORTABLE:-}" ] && has avx512f; then
  flags="$flags -DGGML_AVX512=ON"
  has avx512vbmi && flags="$flags -DGGML_AVX512_VBMI=ON"
  has avx512_vnni && flags="$flags -DGGML_AVX512_VNNI=ON"
  has avx512_bf16 && flags="$flags -DGGML_AVX512_BF16=ON"
fi
echo "$flags"
