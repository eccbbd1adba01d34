#!/usr/bin/env bash
# Regenerate the real trace sets in eval/traces/: every local model x both prompt variants x the
# dev tasks, at the budget table's caps, temperature 0 and seed 7, one file per model.
#
#   bash scripts/record_real_traces.sh [MODEL...]      (default: all three)
#
# qwen2.5-coder-1.5b (the slowest) and gemma-3-270m (a base model) plan the first 24 dev tasks per
# variant, qwen2.5-coder-0.5b all 51 (set N_TASKS to override the count for every model given).
#
# Needs the local extra and the models: pip install -e '.[local]'; helmdeck-dspy models install NAME.
# Resumable: an interrupted run leaves eval/traces/local-NAME.jsonl.partial.jsonl, and running the
# same command again sends only the requests not answered yet. On 2 CPU cores a call takes about
# 13 s (qwen2.5-coder-0.5b) to 40 s (qwen2.5-coder-1.5b). An attempt may take TIMEOUT seconds (default
# 600): llama.cpp serves one request at a time and finishes an abandoned one before the next, so a
# short deadline would only queue its retry behind the answer it gave up on.
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-.venv/bin/helmdeck-dspy}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(qwen2.5-coder-0.5b gemma-3-270m qwen2.5-coder-1.5b)
declare -A model_id=(
  [qwen2.5-coder-0.5b]=local/qwen2.5-coder-0.5b-instruct
  [qwen2.5-coder-1.5b]=local/qwen2.5-coder-1.5b-instruct
  [gemma-3-270m]=local/gemma-3-270m
)
declare -A n_tasks=([qwen2.5-coder-1.5b]=24 [gemma-3-270m]=24)
for name in "${models[@]}"; do
  echo "== $name ($(date -u +%H:%M:%S))"
  "$CLI" traces record --model "${model_id[$name]}" --lm "local:$name" --variant both --tasks dev \
    $(n=${N_TASKS:-${n_tasks[$name]:-}}; [ -n "$n" ] && echo --n "$n") --temperature 0 --seed 7 --timeout "${TIMEOUT:-600}" --retries 1 --progress --out "eval/traces/local-$name.jsonl"
done
