"""What every shipped configuration sends the model is pinned byte for byte (see
``tests/program/prompt_snapshots.py`` for the configurations and how to accept a change)."""

from __future__ import annotations

import json

import pytest

from tests.program.prompt_snapshots import SHIPPED, SNAPSHOTS, capture


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_the_request_matches_its_snapshot(name):
    pinned = json.loads((SNAPSHOTS / f"{name}.json").read_text("utf-8"))
    sent = capture(name)
    assert sent == pinned, (f"{name}: the request sent differs from tests/snapshots/prompts/{name}.json; if the change "
                            "is meant, run: .venv/bin/python -m tests.program.prompt_snapshots tests/snapshots/prompts")


def test_every_snapshot_file_is_a_shipped_configuration():
    assert {p.stem for p in SNAPSHOTS.glob("*.json")} == set(SHIPPED)


def _prompt_texts() -> dict[str, str]:
    """Every fixed text a request the planner sends can carry: section headers, answer formats, the
    asks, the model-alone prompt's sentences and the instruction files."""
    from importlib import resources

    from helmdeck_dspy.program import answer_schema, catalog_filter, plain_prompt, sections
    from helmdeck_dspy.program.strategies import plan_object

    texts = {f"sections.{k}": v for k, v in vars(sections).items() if k.isupper() and isinstance(v, str)
             and not k.startswith("_")}
    texts.update({f"plain_prompt.{k}": getattr(plain_prompt, k)
                  for k in ("ASK", "CALL_ASK", "FIT_ASK", "RETRY_ASK", "RETRY_FIT_ASK", "CONTEXT_LEAD", "PRIOR_LEAD")})
    texts.update({f"plan_object.{k}": getattr(plan_object, k)
                  for k in ("FORMAT_FULL_STEPS", "FORMAT_SINGLE_PICK", "NO_FIT_CONSTRAINED", "NO_FIT_FREE")})
    texts.update({f"answer_schema.{k}": getattr(answer_schema, k) for k in ("CONSTRAINED_FORMAT", "CONSTRAINED_STEPS_FORMAT")})
    texts.update({f"catalog_filter.{k}": v for k, v in vars(catalog_filter).items()
                  if k.isupper() and isinstance(v, str) and len(v) > 20})
    folder = resources.files("helmdeck_dspy.signatures").joinpath("instructions")
    texts.update({f"instructions/{f.name}": f.read_text("utf-8").strip() for f in folder.iterdir()
                  if f.name.endswith(".md")})
    return texts


def test_every_prompt_text_is_pinned_by_a_snapshot():
    """Each text appears whole in at least one pinned request, so changing one character of it
    changes a request body the snapshots compare exactly."""
    pinned = [json.dumps(json.loads((SNAPSHOTS / f"{name}.json").read_text("utf-8")), ensure_ascii=False)
              for name in SHIPPED]
    texts = _prompt_texts()
    assert len(texts) >= 20
    missing = [name for name, text in texts.items()
               if not any(json.dumps(text, ensure_ascii=False)[1:-1] in body for body in pinned)]
    assert not missing, f"prompt texts no snapshot carries: {missing}"
