"""The one table of settings: precedence, checks, the docs made from it, and settings that
had no test of their own (band margin, .jsonl documents, --ragdive-model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PROJECT_CONFTEST

from pytest_ragdive.engine.documents import load_documents
from pytest_ragdive.engine.settings import SETTINGS, SettingError, check, parse, scored_metrics
from pytest_ragdive.engine.validator import asks_model
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.scripted import calls
from pytest_ragdive.plugin import bands
from pytest_ragdive.plugin.options import Options, reference

ROOT = Path(__file__).resolve().parent.parent


def options(pytester: pytest.Pytester, ini: str, *args: str) -> Options:
    pytester.makeini(f"[pytest]\n{ini}\n")
    return Options(pytester.parseconfigure(*args))


@pytest.mark.parametrize(
    ("ini", "marker", "cli", "expected"),
    [
        ("", {}, (), 5),  # the default
        ("ragdive_turns = 4", {}, (), 4),  # ini over default
        ("ragdive_turns = 4", {"turns": 3}, (), 3),  # marker over ini
        ("ragdive_turns = 4", {"turns": 3}, ("--ragdive-turns=2",), 2),  # command line first
    ],
)
def test_precedence_command_line_marker_ini_default(
    pytester: pytest.Pytester, ini: str, marker: dict, cli: tuple, expected: int
) -> None:
    settings = options(pytester, ini, *cli).for_item(marker, "test")
    assert settings.turns == expected


def test_every_setting_reaches_an_item(pytester: pytest.Pytester) -> None:
    ini = ("ragdive_role = skeptic\nragdive_metrics = correctness forgetfulness\n"
           "ragdive_max_regenerations = 0\nragdive_validation = once\n"
           "ragdive_baseline_runs = 7")
    settings = options(pytester, ini).for_item({}, "test")
    assert (settings.role, settings.metrics, settings.max_regenerations, settings.validation,
            settings.runs) == ("skeptic", ("correctness", "forgetfulness"), 0, "once", 7)
    assert options(pytester, ini, "--ragdive-runs=2").for_item({"runs": 5}, "t").runs == 2


def test_a_metric_the_judge_measured_at_chance_is_left_out_unless_chosen(
    pytester: pytest.Pytester,
) -> None:
    embedded = "embedded/qwen2.5-coder-1.5b"
    default = options(pytester, "").for_item({}, "test")
    assert "context_retention" in default.metrics
    assert "context_retention" not in default.judged_by(embedded).metrics
    assert "forgetfulness" in default.judged_by(embedded).metrics
    assert default.judged_by("openai/gpt-4o-mini").metrics == default.metrics
    chosen = options(pytester, "").for_item({"metrics": ["context_retention"]}, "test")
    assert chosen.judged_by(embedded).metrics == ("context_retention",)
    assert "context_retention" not in scored_metrics(None, 3, "run_dialogue", embedded)
    # and the validator model's checks, which it answered at chance, are asked only if told
    assert [asks_model(Model(embedded), c) for c in ("auto", "all", "exact")] == [False, True, False]
    assert asks_model(Model("openai/gpt-4o-mini"), "auto")


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("ragdive_turns = three", "ini ragdive_turns: turns = 'three' is not an integer >= 1"),
        ("ragdive_validation = always", "validation='always' is not 'until_valid' or 'once'"),
        ("ragdive_role = precsie", "unknown role 'precsie'"),
        ("ragdive_band_margin = nan", "band_margin=nan is not a number >= 0"),
        ("ragdive_metrics = correctness bleu", "unknown metrics 'bleu'"),
        ("ragdive_fail_on_improvement = maybe", "is not true or false"),
    ],
)
def test_a_bad_ini_value_stops_the_run_with_one_line(
    pytester: pytest.Pytester, ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_a_bad_command_line_value_names_the_flag(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("--ragdive-role=precsie")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ragdive-role: unknown role 'precsie'*"])


def test_check_and_parse_agree_on_every_setting() -> None:
    for name, setting in SETTINGS.items():
        assert check(name, setting.default, "default") == setting.default
        if setting.kind in (int, float):
            with pytest.raises(SettingError, match=name):
                parse(name, "-1", "test")
            with pytest.raises(SettingError, match=name):
                check(name, True, "test")


def test_the_configuration_reference_is_the_table() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == reference(), (
        "docs/configuration.md is out of date: python -m pytest_ragdive.plugin.options "
        "> docs/configuration.md")
    for setting in SETTINGS.values():
        assert f"`{setting.name}`" in page


def test_band_margin_widens_every_band() -> None:
    doc = bands.band({"correctness": [0.8, 0.9], "forgetfulness": [0.0, 0.1]},
                     {"metrics": ["correctness", "forgetfulness"]})
    scores = {"correctness": 0.75, "forgetfulness": 0.14}
    assert [d.metric for d in bands.compare(doc, scores, 0.0)] == ["correctness", "forgetfulness"]
    assert bands.compare(doc, scores, 0.05) == []
    assert [d.worse for d in bands.compare(doc, {"correctness": 0.7}, 0.05)] == [True]


def test_jsonl_documents_load_sorted_with_their_metadata(tmp_path: Path) -> None:
    (tmp_path / "kb.jsonl").write_text(
        json.dumps({"id": "b", "text": "Bee.", "metadata": {"lang": "en"}}) + "\n\n"
        + json.dumps({"id": "a", "text": "Ay."}) + "\n", encoding="utf-8")
    docs = load_documents("kb.jsonl", root=tmp_path)
    assert [(d.id, d.text, d.metadata) for d in docs] == [("a", "Ay.", {}),
                                                          ("b", "Bee.", {"lang": "en"})]
    (tmp_path / "bad.jsonl").write_text('{"id": "c"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: not a document"):
        load_documents("bad.jsonl", root=tmp_path)


def test_ragdive_model_replaces_the_fixtures_judges_and_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOT_MODE", "good")
    pytester.makeconftest(PROJECT_CONFTEST + "\nOTHER = scripted({'YesNo': yes}, name='other')\n")
    pytester.makepyfile(test_bot="""
        import pytest_ragdive as ragdive

        @ragdive.conversation(turns=1, runs=1)
        def test_bot(ragdive_dialogue):
            pass
    """)
    result = pytester.runpytest("-m", "ragdive", "--ragdive-update", "-p", "no:cacheprovider",
                                "--ragdive-model=fake/other", "-k", "alpha")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["note: --ragdive-model fake/other replaced the models of the "
                                 "ragdive_judges fixture (fake/judge)"])
    assert calls("fake/other") and not calls("fake/judge")
