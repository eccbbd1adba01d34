#!/usr/bin/env bash
# `make demo-live`: the planner against a real model on this machine. Installs the `local` extra
# (llama-cpp-python; the first build takes 8-15 minutes) and Qwen2.5 Coder 0.5B Instruct (491 MB),
# then plans the demo intents live through llama.cpp's OpenAI-compatible server on 127.0.0.1.
# Every call is a real model call: on 2 CPU cores each takes about 10-35 s.
set -euo pipefail
PY=.venv/bin/python
CLI=.venv/bin/helmdeck-dspy
MODEL=local/qwen2.5-coder-0.5b-instruct
LM=local:qwen2.5-coder-0.5b

section() { printf '\n\033[1m== %s\033[0m\n' "$1"; }

section "Installing the local extra (log: .venv/local-install.log) and the model"
# Built as docs/local-models.md says: scripts/cmake_args.sh (GGML_NATIVE=OFF, plus the AVX-512 this
# CPU reports; never AMX). An llama-cpp-python already importable is kept.
if ! $PY -c 'import llama_cpp' 2> /dev/null; then
  CMAKE_ARGS="$(bash scripts/cmake_args.sh)" $PY -m pip install --disable-pip-version-check --no-cache-dir \
    "llama-cpp-python[server]==0.3.36" > .venv/local-install.log 2>&1 \
    || { tail -n 30 .venv/local-install.log; echo "install failed: see .venv/local-install.log"; exit 1; }
fi
$PY -m pip install --disable-pip-version-check -e '.[dev,local]' >> .venv/local-install.log 2>&1 \
  || { tail -n 30 .venv/local-install.log; echo "install failed: see .venv/local-install.log"; exit 1; }
$CLI models install qwen2.5-coder-0.5b
$CLI models install qwen2.5-coder-1.5b
$CLI models list
bash scripts/install_mcp_servers.sh  # the six real servers the agent's tasks run on

section "Its budget row"
$CLI budgets lookup "$MODEL"
# The tier and prompt variant `plan` will use, from the same lookup (the headings below name them).
read -r TIER VARIANT < <($CLI budgets lookup "$MODEL" --json \
  | $PY -c 'import json, sys; row = json.load(sys.stdin); print(row["tier"], row["prompt_variant"])')

for intent in "remember this MiniMax M3 launch, write a blog about it and make an illustration" \
              "make a narrated presentation video about https://github.com/acme/ledger"; do
  section "Live plan ($VARIANT, Tier $TIER): \"$intent\""
  $CLI plan "$intent" --model "$MODEL" --lm "$LM" --no-history \
    || echo "(the model's answer was not a usable plan: the line above says why)"
done

section "Live plan over a plain list of tools (37 tools of four real MCP servers)"
# The strategy line says how the model answered over a catalog without pipelines: the row's
# tool_list_strategy, else its answer_strategy, else the endpoint's default (docs/results/strategies.md).
$CLI plan "What time is it in Tokyo right now?" --model "$MODEL" --lm "$LM" --no-history \
  --catalog eval/catalog/mcp-servers.json \
  || echo "(the model's answer was not a usable plan: the line above says why)"

section "The single_pick loop, live: plan one step, 'run' it, plan the next with the steps done"
$PY scripts/demo_loop.py --model "$MODEL" --lm "$LM" \
  "scrape https://example.org/launch, summarise it, then write a blog post about it"

section "An agent finishing tasks: the planner's loop over six real MCP servers, Qwen2.5 Coder 1.5B, live"
# Three end-to-end tasks of eval/e2e/tasks.jsonl, each in a fresh sandbox: every call the loop made,
# what came back, and whether the study's checks held afterwards.
$PY scripts/demo_agent.py --model local/qwen2.5-coder-1.5b-instruct --lm local:qwen2.5-coder-1.5b \
  git-08 filesystem-12 multi-server-06
