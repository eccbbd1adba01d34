#!/usr/bin/env bash
# `make demo`: the main job on the bundled defaults. Run from the repository root.
set -euo pipefail
CLI=.venv/bin/helmdeck-dspy
INTENT="remember this MiniMax M3 launch, write a blog about it and make an illustration"
OUT=.helmdeck/demo-report  # the demo's own scratch folder: each run replaces what the last one wrote there

section() { printf '\n\033[1m== %s\033[0m\n' "$1"; }

section "Budget table (compiled/budgets.toml)"
$CLI budgets show

section "Budget lookups"
$CLI budgets lookup openrouter/nvidia/nemotron-3-super-120b-a12b:free anthropic/claude-sonnet-4-6 \
  openrouter/deepseek/deepseek-v3.2 openrouter/meta-llama/llama-3.3-70b-instruct:free brand-new-vendor/model-x

section "Tolerant decoding of bundled completions (eval/examples/completions.jsonl)"
$CLI parse --batch eval/examples/completions.jsonl

section "Catalog selection for: \"$INTENT\""
for m in anthropic/claude-sonnet-4-6 openrouter/nvidia/nemotron-3-super-120b-a12b:free; do
  echo
  $CLI catalog select --model "$m" --intent "$INTENT"
done
echo
echo "(helmdeck's ranking, lexical over the compacted catalog, for comparison:)"
$CLI catalog select --model openrouter/nvidia/nemotron-3-super-120b-a12b:free --intent "$INTENT" \
  --ranker lexical --rank-source compacted | tail -n +4

shopt -s nullglob
REAL=()
for f in eval/traces/local-*.jsonl; do [[ $f == *.partial.jsonl ]] || REAL+=("$f"); done  # finished sets only
if [ ${#REAL[@]} -gt 0 ]; then
  section "REAL models: replay evaluation of the recorded local-model trace sets -> $OUT/real"
  echo "(llama.cpp on this machine, temperature 0; scripts/record_real_traces.sh regenerates them; no model needed here)"
  $CLI eval "${REAL[@]}" --out "$OUT/real" --force --no-progress
  section "Calibration proposal from the real report (nothing is applied)"
  $CLI calibrate --report "$OUT/real/report.json"
fi

section "Planning with the compiled programs against SIMULATED models (not real model calls)"
for intent in "$INTENT" "make a narrated presentation video about https://github.com/acme/ledger"; do
  $CLI plan "$intent" --model openrouter/nvidia/nemotron-3-super-120b-a12b:free --lm sim:nemotron-like --no-history \
    || echo "(the simulated Tier C model failed this call; its profile fails about one call in five)"
  echo
done
$CLI plan "$INTENT" --model anthropic/claude-sonnet-4-6 --lm sim:frontier-like --no-history

section "The planner behind an OpenAI-compatible endpoint (serve --openai), asked by the openai SDK: SIMULATED model"
.venv/bin/python scripts/demo_openai.py

section "SIMULATED and published trace sets: replay evaluation -> $OUT/sim"
$CLI eval eval/traces/nemotron-style.jsonl eval/traces/published-adr053.jsonl --out "$OUT/sim" --force --no-progress

section "Calibration proposal from the simulated report (nothing is applied; --apply would refuse it)"
$CLI calibrate --report "$OUT/sim/report.json"

BFCL=../shared/data/bfcl
if [ -d "$BFCL" ]; then
  section "BFCL: do the gold tools survive catalog selection? (pooled catalog, bm25 vs helmdeck's lexical)"
  $CLI bench bfcl --data "$BFCL" --pool --rankers lexical,bm25 --out "$OUT/bfcl" --force --no-progress
else
  echo "(skipping the BFCL benchmark: $BFCL is absent)"
fi
