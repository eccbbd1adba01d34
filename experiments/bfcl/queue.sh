#!/bin/sh
# The live lever runs, most telling first: the 1.5B's BFCL default framed as the model alone's
# question (default-answer), the real MCP tools without the fit decision, the test split without the
# fit decision (1.5B), the 1.5B alone on the test split (16K context), pipelines named by id (1.5B),
# the 0.5B on it without the fit decision (its default here), the 1.5B with demos chosen per
# request, the 1.5B's BFCL default over a pooled catalog (selection needed), the 1.5B's
# budget-row default on the test split (single_pick), the 0.5B with the fit decision, the cost of
# constrained decoding per output token, the real MCP tools on the 1.5B, the rows that test where
# the 1.5B's default loses on BFCL (irrelevance), BFCL on the 0.5B, the rest of the test split on
# both models, the rest of the 1.5B's BFCL questions (60 per category), then the other single-lever
# rows and demos. Each step resumes where it stopped. Log: experiments/bfcl/bench-live.log
# (make bench-live).
CLI=${CLI:-.venv/bin/helmdeck-dspy}
B15=experiments/bfcl/qwen2.5-coder-1.5b/levers.toml
B05=experiments/bfcl/qwen2.5-coder-0.5b/levers.toml
MCP=experiments/mcp/qwen2.5-coder-1.5b/levers.toml
T15=experiments/test-split/qwen2.5-coder-1.5b/levers.toml
T05=experiments/test-split/qwen2.5-coder-0.5b/levers.toml
$CLI bench levers --no-progress --only default-answer "$B15" &&
$CLI bench levers --no-progress --only default-nofit "$MCP" &&
$CLI bench levers --no-progress --only full_steps-nofit "$T15" &&
$CLI bench levers --no-progress --only plain "$T15" &&
$CLI bench levers --no-progress --only full_steps-ids "$T15" &&
$CLI bench levers --no-progress --only full_steps-nofit "$T05" &&
$CLI bench levers --no-progress --only full_steps-knn3,full_steps-ids-knn3 "$T15" &&
$CLI bench levers --no-progress --only default-pool "$B15" &&
$CLI bench levers --no-progress --only single_pick-nofit "$T15" &&
$CLI bench levers --no-progress --only full_steps "$T05" &&
{ [ -s experiments/constrained-cost.txt ] || "$(dirname "$CLI")/python" measure/constrained_cost.py --n 8 > experiments/constrained-cost.tmp && mv experiments/constrained-cost.tmp experiments/constrained-cost.txt; } &&
$CLI bench levers --no-progress "$MCP" &&
$CLI bench levers --no-progress --only default-last,default-strict,default-nearest "$B15" &&
$CLI bench levers --no-progress --only plain,default,default-multi "$B05" &&
$CLI bench levers --no-progress "$T15" &&
$CLI bench levers --no-progress "$T05" &&
$CLI bench levers --no-progress --only plain,default "$B15" &&
$CLI bench levers --no-progress --only constrained,today,coerce,default-steps,fitted "$B15" &&
$CLI bench levers --no-progress "$B05" &&
$CLI bench levers --no-progress "$B15"
