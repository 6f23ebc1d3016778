"""The one table of settings: precedence, checks, the docs made from it, and settings that
had no test of their own (band margin, .jsonl documents, --ragdive-model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PROJECT_CONFTEST, PROJECT_INI

from pytest_ragdive.engine.base.settings import SETTINGS, SettingError, check, parse, scored_metrics
from pytest_ragdive.engine.documents.loading import load_documents
from pytest_ragdive.engine.validation.validator import QUESTIONS, model_checks
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.scripted import calls
from pytest_ragdive.plugin.options import ItemSettings, Options, reference
from pytest_ragdive.plugin.run_record import RunRecord

ROOT = Path(__file__).resolve().parent.parent


def options(pytester: pytest.Pytester, ini: str, *args: str) -> Options:
    pytester.makeini(f"[pytest]\n{ini}\n")
    return Options(pytester.parseconfigure(*args))


TURNS_TEST = """
import pytest_ragdive as ragdive

@ragdive.conversation({marker}runs=1, metrics=["correctness"])
def test_bot(ragdive_dialogue):
    pass
"""


def turns_held(project: pytest.Pytester, ini: str, marker: str, *args: str) -> tuple[int, int]:
    """The turns of the dialogue a run held about alpha, and those its band file records."""
    project.makeini(PROJECT_INI + ini)
    project.makepyfile(test_bot=TURNS_TEST.format(marker=marker))
    result = project.runpytest("-m", "ragdive", "-k", "alpha", "--ragdive-update",
                               "--ragdive-json=run.json", *args)
    result.assert_outcomes(passed=1)
    (test,) = RunRecord.model_validate_json((project.path / "run.json").read_text()).tests
    (item,) = test.items
    assert item.dialogue is not None
    band = json.loads((project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json")
                      .read_text())
    return len(item.dialogue.turns), band["produced_by"]["turns"]


def test_precedence_command_line_marker_ini_default(project: pytest.Pytester) -> None:
    ini = "ragdive_turns = 4\n"
    assert turns_held(project, ini, "turns=3, ", "--ragdive-turns=2") == (2, 2)
    assert turns_held(project, ini, "turns=3, ") == (3, 3)
    assert turns_held(project, ini, "") == (4, 4)
    assert turns_held(project, "", "") == (5, 5)


def test_ini_dialogue_settings_reach_an_item_and_the_command_line_sets_runs(
    pytester: pytest.Pytester,
) -> None:
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
    session = options(pytester, "")
    default = session.for_item({}, "test")

    def judged_by(settings: ItemSettings, model: str) -> ItemSettings:
        return settings.judged_by({"evaluator": model}, model, session.profiles())

    assert "context_retention" in default.metrics
    assert "context_retention" not in judged_by(default, embedded).metrics
    assert "forgetfulness" in judged_by(default, embedded).metrics
    assert judged_by(default, "openai/gpt-4o-mini").metrics == default.metrics
    chosen = session.for_item({"metrics": ["context_retention"]}, "test")
    assert judged_by(chosen, embedded).metrics == ("context_retention",)
    assert "context_retention" not in scored_metrics(None, 3, "run_dialogue", embedded)
    # and the validator model's checks, which it answered at chance, are asked only if told,
    # at the plain reading
    assert [model_checks(Model(embedded), c) for c in ("auto", "all", "exact")] == [
        {}, dict.fromkeys(QUESTIONS, 0.5), {}]
    assert model_checks(Model("openai/gpt-4o-mini"), "auto") == dict.fromkeys(QUESTIONS, 0.5)


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("ragdive_turns = three", "ini ragdive_turns: turns = 'three' is not an integer >= 1"),
        ("ragdive_validation = always", "validation='always' is not 'until_valid' or 'once'"),
        ("ragdive_role = precsie", "unknown role 'precsie'"),
        ("ragdive_band_margin = nan", "band_margin=nan is not a number >= 0"),
        ("ragdive_metrics = correctness bleu", "unknown metrics 'bleu'"),
        ("ragdive_fail_on_improvement = maybe", "is not true or false"),
        ("ragdive_call_timeout = 0", "call_timeout=0.0 is not a number of seconds above 0"),
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


FORGETS_LATE = """
import pytest_ragdive as ragdive

@ragdive.conversation(turns=3, runs=1, metrics=["context_retention", "forgetfulness"])
def test_bot(ragdive_dialogue):
    pass
"""


@pytest.mark.parametrize(("margin", "passed"), [("", False), ("0.04", False), ("0.06", True)])
def test_band_margin_lets_a_score_within_it_of_its_band_pass(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, margin: str, passed: bool
) -> None:
    """The bot forgets at turn 3 (both metrics 0.5); alpha's bands are moved 0.05 past that
    on the worse side: above it for context_retention, below it for forgetfulness."""
    monkeypatch.setenv("BOT_MODE", "forgets late")
    project.makepyfile(test_bot=FORGETS_LATE)
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    path = project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json"
    band = json.loads(path.read_text())
    for metric, value in (("context_retention", 0.55), ("forgetfulness", 0.45)):
        assert band["metrics"][metric]["runs"] == [0.5]
        band["metrics"][metric].update(min=value, max=value, mean=value, runs=[value])
    path.write_text(json.dumps(band))

    if margin:
        project.makeini(f"{PROJECT_INI}ragdive_band_margin = {margin}\n")
    result = project.runpytest("-m", "ragdive", "--ragdive-verdict=band")
    if passed:
        result.assert_outcomes(passed=3)  # two items and the test's verdict
        return
    result.assert_outcomes(passed=2, failed=1)  # beta, and the mean inside its band
    result.stdout.fnmatch_lines([
        "scores left their baseline band:",
        "  forgetfulness = 0.500, band [[]0.450, 0.450[]] (worse)",
        "*context_retention = 0.500, band [[]0.550, 0.550[]] (worse)",
        "FAILED test_bot.py::test_bot[[]alpha[]] - *",
    ])


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
