"""The evaluation plots: three non-trivial PNGs, in a fixed order, for 1 to 15 groups."""

from __future__ import annotations

import struct
from pathlib import Path

from helmdeck_dspy.evaluation.plots import (
    PLOT_FILES,
    common_prefix,
    group_cap,
    wrap_label,
    write_plots,
)
from helmdeck_dspy.evaluation.report import (
    Distribution,
    EvalReport,
    GroupReport,
    InputFile,
)
from helmdeck_dspy.evaluation.stats import wilson

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MODELS = [
    "openrouter/nvidia/nemotron-3-super-120b-a12b:free",
    "openrouter/qwen/qwen3-235b-a22b-thinking-2507",
    "openrouter/meta-llama/llama-3.3-70b-instruct:free",
    "openrouter/google/gemini-2.5-flash-lite-preview-06-17",
    "openrouter/mistralai/mistral-small-3.2-24b-instruct",
    "openrouter/deepseek/deepseek-r1-0528-qwen3-8b:free",
    "openrouter/z-ai/glm-4.5-air",
    "openrouter/openai/gpt-oss-20b",
]


def make_group(model: str, variant: str, *, n: int = 40, strict: int = 30, repaired: int = 4,
               finish: dict[str, int] | None = None, tokens: tuple[float, float, float, float] | None = (300, 520, 580, 640),
               cap: int | None = 600, tier: str = "C", kind: str = "sim:test") -> GroupReport:
    finish = finish if finish is not None else {"stop": n - 5, "length": 5}
    if tokens:
        p50, p90, p95, mx = tokens
        dist = Distribution(n=n, mean=p50, p50=p50, p90=p90, p95=p95, max=mx)
    else:
        dist = Distribution()
    tolerant = strict + repaired
    return GroupReport(
        kind=kind, model=model, prompt_variant=variant, tier=tier, sources={kind: n}, n=n, strict=strict, tolerant=tolerant,
        strict_rate=strict / n if n else 0.0, strict_ci=wilson(strict, n),
        tolerant_rate=tolerant / n if n else 0.0, tolerant_ci=wilson(tolerant, n),
        length_rate=finish.get("length", 0) / n if n else 0.0, length_ci=wilson(finish.get("length", 0), n),
        finish_reason_counts=finish, finish_reason_raw_counts=finish, failure_cause_counts={},
        completion_tokens=dist, clean_completion_tokens=dist, latency_ms=Distribution(), prompt_tokens=Distribution(),
        max_tokens_counts={str(cap): n} if cap else {}, reasoning_leak_count=0, reasoning_leak_rate=0.0,
        reasoning_tag_count=0, reasoning_field_count=0, from_label=0,
    )


def make_report(groups: list[GroupReport]) -> EvalReport:
    return EvalReport(
        created_at="2026-01-01T00:00:00+00:00", tool_version="0.0.test",
        inputs=[InputFile(path="fake.jsonl", format="jsonl", sha256="0" * 64, records=sum(g.n for g in groups))],
        trace_set_sha256="f" * 64, catalog_fingerprint="deadbeef", tasks=0,
        n_records=sum(g.n for g in groups), n_skipped=0, groups=groups, tiers=[], comparisons=[], seconds=0.1, workers=1,
    )


def mixed_report(n_groups: int) -> EvalReport:
    """``n_groups`` groups over several models, both variants, varied finish reasons and token ranges."""
    groups = []
    finishes = [
        {"stop": 30, "length": 8, "none": 2},
        {"stop": 20, "length": 15, "safety": 3, "other": 2},
        {"stop": 40},
        {"tool_calls": 10, "stop": 25, "other": 5},
    ]
    i = 0
    while len(groups) < n_groups:
        model = MODELS[i % len(MODELS)] + ("" if i < len(MODELS) else f"-v{i // len(MODELS)}")
        for variant in ("full_steps", "single_pick"):
            if len(groups) >= n_groups or (variant == "single_pick" and i % 3 == 2):
                continue
            k = len(groups)
            tokens = None if k % 5 == 4 else (80.0 * (k + 1), 150.0 * (k + 1), 170.0 * (k + 1), 4000.0 * (k % 3 + 1))
            groups.append(make_group(model, variant, strict=(7 * k) % 38, repaired=k % 3, finish=finishes[k % 4],
                                     tokens=tokens, cap=None if k == 3 else (600 if variant == "single_pick" else 2048),
                                     tier="ABC"[k % 3]))
        i += 1
    return make_report(groups)


def _check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path.name} is not a PNG"
    assert 10_000 < len(data) < 3_000_000, f"{path.name}: {len(data)} bytes"
    width, height = struct.unpack(">II", data[16:24])
    assert 600 <= width <= 2500 and 300 <= height <= 4000, (path.name, width, height)
    from matplotlib.image import imread

    img = imread(str(path))
    assert img.shape[0] == height and img.shape[1] == width
    rgb = img[..., :3]
    # not a single flat colour: several distinct colours, and a fair share of non-white pixels
    flat = rgb.reshape(-1, 3)
    assert float(rgb.std()) > 0.05, f"{path.name} looks blank"
    distinct = {tuple(px) for px in (flat[:: max(1, len(flat) // 20000)] * 255).round().astype(int).tolist()}
    assert len(distinct) > 20, f"{path.name}: only {len(distinct)} colours"
    nonwhite = float((rgb.min(axis=-1) < 0.9).mean())
    assert 0.02 < nonwhite < 0.9, f"{path.name}: {nonwhite:.3f} non-white"


def test_single_group(tmp_path: Path) -> None:
    report = make_report([make_group(MODELS[0], "full_steps", n=6, strict=3, repaired=0, finish={"stop": 4, "length": 2},
                                     tokens=(655, 1541, 1544, 1547))])
    names = write_plots(report, tmp_path / "plots")
    assert names == list(PLOT_FILES) == ["parse_success.png", "finish_reasons.png", "completion_tokens.png"]
    for name in names:
        _check_png(tmp_path / "plots" / name)


def test_fifteen_groups_mixed(tmp_path: Path) -> None:
    report = mixed_report(15)
    assert len(report.groups) == 15
    assert any(g.completion_tokens.n == 0 for g in report.groups)
    assert {g.prompt_variant for g in report.groups} == {"full_steps", "single_pick"}
    names = write_plots(report, tmp_path)
    assert names == list(PLOT_FILES)
    for name in names:
        _check_png(tmp_path / name)
    # more groups -> taller figures than the one-group case
    one = write_plots(make_report([make_group(MODELS[0], "full_steps")]), tmp_path / "one")
    tall = struct.unpack(">II", (tmp_path / names[0]).read_bytes()[16:24])[1]
    short = struct.unpack(">II", (tmp_path / "one" / one[0]).read_bytes()[16:24])[1]
    assert tall > short


def test_groups_without_tokens_or_caps(tmp_path: Path) -> None:
    report = make_report([
        make_group(MODELS[1], "full_steps", tokens=None, cap=None),
        make_group(MODELS[2], "single_pick", tokens=None, cap=1024, finish={}),
        make_group("local-model", "single_pick", n=0, strict=0, repaired=0, finish={}, tokens=None, cap=None),
    ])
    assert write_plots(report, tmp_path) == list(PLOT_FILES)
    for name in PLOT_FILES:
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC


def test_real_report(tmp_path: Path) -> None:
    from helmdeck_dspy.evaluation.runner import evaluate

    root = Path(__file__).resolve().parents[2]
    report = evaluate([root / "eval" / "traces" / "published-adr053.jsonl"], progress=False)
    names = write_plots(report, tmp_path)
    assert names == list(PLOT_FILES)
    for name in names:
        _check_png(tmp_path / name)


def test_empty_report_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "plots"
    assert write_plots(make_report([]), out) == []
    assert not out.exists() or not any(out.iterdir())


def test_write_plots_leaves_pyplot_alone() -> None:
    import subprocess
    import sys

    code = (
        "import sys, tempfile, pathlib\n"
        "from tests.evaluation.test_plots import make_report, make_group, MODELS\n"
        "from helmdeck_dspy.evaluation.plots import write_plots\n"
        "assert 'matplotlib' not in sys.modules\n"
        "write_plots(make_report([make_group(MODELS[0], 'full_steps')]), pathlib.Path(tempfile.mkdtemp()))\n"
        "assert 'matplotlib' in sys.modules and 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_labels() -> None:
    assert common_prefix(MODELS) == "openrouter/"
    assert common_prefix([MODELS[0]]) == "openrouter/nvidia/"
    assert common_prefix(["a/b", "c/d"]) == ""
    assert common_prefix(["same", "same"]) == ""
    wrapped = wrap_label("nvidia/nemotron-3-super-120b-a12b:free-with-a-very-long-suffix", width=20)
    lines = wrapped.split("\n")
    assert len(lines) > 1 and all(len(line) <= 20 for line in lines)
    assert "".join(lines) == "nvidia/nemotron-3-super-120b-a12b:free-with-a-very-long-suffix"
    assert wrap_label("x" * 50, width=20).split("\n") == ["x" * 20, "x" * 20, "x" * 10]
    assert wrap_label("short") == "short"


def test_group_cap_is_most_common() -> None:
    g = make_group(MODELS[0], "full_steps")
    g.max_tokens_counts = {"600": 3, "2048": 10, "bogus": 50}
    assert group_cap(g) == 2048
    g.max_tokens_counts = {}
    assert group_cap(g) is None


def test_returned_files_exist_and_nothing_else(tmp_path: Path) -> None:
    names = write_plots(mixed_report(2), tmp_path)
    assert [p.name for p in sorted(tmp_path.iterdir(), key=lambda p: names.index(p.name))] == names
