#!/bin/sh
# The live lever runs (issue 22), most telling first; the rows each step answers are in its spec.
# Each step resumes where it stopped. Log: experiments/bfcl/bench-live.log (make bench-live).
# B15/B05: BFCL; MCP: the real MCP servers' tools; T15/T05: the project's test split; SIZE15/SIZE05: the
# models' catalog sizes on the dev split.
CLI=${CLI:-.venv/bin/helmdeck-dspy}
B15=experiments/bfcl/qwen2.5-coder-1.5b/levers.toml
B05=experiments/bfcl/qwen2.5-coder-0.5b/levers.toml
MCP=experiments/mcp/qwen2.5-coder-1.5b/levers.toml
T15=experiments/test-split/qwen2.5-coder-1.5b/levers.toml
T05=experiments/test-split/qwen2.5-coder-0.5b/levers.toml
SIZE15=experiments/catalog-size/qwen2.5-coder-1.5b/levers.toml
SIZE05=experiments/catalog-size/qwen2.5-coder-0.5b/levers.toml
$CLI bench levers --no-progress --only default-answer "$B15" &&
$CLI bench levers --no-progress --only default-nofit "$MCP" &&
$CLI bench levers --no-progress --only full_steps-nofit "$T15" &&
$CLI bench levers --no-progress --only plain "$T15" &&
$CLI bench levers --no-progress --only full_steps-ids "$T15" &&
$CLI bench levers --no-progress --only full_steps-nofit "$T05" &&
$CLI bench levers --no-progress --only full_steps-knn3 "$T15" &&
$CLI bench levers --no-progress --only full_steps-ids-knn3 "$T15" &&
$CLI bench levers --no-progress --only plain "$T05" &&
$CLI bench levers --no-progress --only full_steps-knn3-steps "$T15" &&
$CLI bench levers --no-progress --only full_steps-knn3-gate "$T15" &&
$CLI bench levers --no-progress --only default-pool "$B15" &&
{ [ -s experiments/constrained-cost.txt ] || { "$(dirname "$CLI")/python" measure/constrained_cost.py --n 8 > experiments/constrained-cost.tmp && mv experiments/constrained-cost.tmp experiments/constrained-cost.txt; }; } &&
$CLI bench levers --no-progress --only plain,default "$B15" &&
$CLI bench levers --no-progress --only constrained,today,coerce "$B15" &&
$CLI bench levers --no-progress "$SIZE05" &&
$CLI bench levers --no-progress --only full_steps-top6 "$T05" &&
$CLI bench levers --no-progress --only single_pick-nofit "$T05" &&
$CLI bench levers --no-progress --only fitted "$B15" &&
$CLI bench levers --no-progress --only today "$B05" &&
$CLI bench levers --no-progress "$SIZE15" &&
$CLI bench levers --no-progress --only single_pick-nofit "$T15" &&
$CLI bench levers --no-progress --only default-multi "$B15" &&
$CLI bench levers --no-progress --only full_steps "$T05" &&
$CLI bench levers --no-progress "$MCP" &&
$CLI bench levers --no-progress --only default-last,default-strict,default-nearest "$B15" &&
$CLI bench levers --no-progress --only plain,default,default-multi "$B05" &&
$CLI bench levers --no-progress "$T15" &&
$CLI bench levers --no-progress "$T05" &&
$CLI bench levers --no-progress --only default-steps,fitted "$B15" &&
$CLI bench levers --no-progress "$B05" &&
$CLI bench levers --no-progress "$B15"
