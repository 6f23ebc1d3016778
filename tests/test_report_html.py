"""The run record (JSON) and the HTML report: content, escaping, ordering, size, a real browser."""

from __future__ import annotations

import random
import shutil
import subprocess
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_ragdive.engine.base.metrics import MULTI_TURN_METRICS
from pytest_ragdive.engine.base.models import (
    Dialogue,
    GeneratedTurn,
    Judgement,
    RagAnswer,
    Rejection,
    Turn,
    Usage,
    Validation,
)
from pytest_ragdive.engine.base.settings import EVERY_ROLE as METRICS  # the six of RAG-DIVE
from pytest_ragdive.plugin import bands as baseline
from pytest_ragdive.plugin.html_report import chart, render
from pytest_ragdive.plugin.records import BandDoc, ProducedBy
from pytest_ragdive.plugin.run_record import (
    Band,
    ItemRecord,
    MetricRecord,
    RunRecord,
    TestRecord,
    metric_records,
)

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "<script>alert(1)</script>"
BREAKOUT = "</details><img src=x onerror=alert(2)>"
HOSTILE = f"{SCRIPT} and {BREAKOUT}"

# -- building records -------------------------------------------------------------------

PROSE = ("the bike share scheme runs from March to November with docks at every tram stop "
         "members pay a yearly fee of forty euros and ride the first thirty minutes free each "
         "trip longer rides cost one euro per extra half hour the night service stops at midnight "
         "electric bikes need a deposit and are charged at the central depot on Harbour Street")
WORDS = PROSE.split()


def text(rng: random.Random, length: int) -> str:
    """Plausible prose of about ``length`` characters."""
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < length:
        words.append(rng.choice(WORDS))
    sentence = " ".join(words)
    return sentence[0].upper() + sentence[1:] + "."


def dialogue(document_id: str, turns: int, seed: int = 0, hostile: bool = False) -> Dialogue:
    """A finished dialogue with realistic text lengths: three ~400-character contexts per
    turn, every judgement with a reason, a rejection every other turn."""
    rng = random.Random(seed)
    evil = f" {HOSTILE}" if hostile else ""
    made = []
    for index in range(1, turns + 1):
        metrics = [m for m in METRICS if index > 1 or m not in MULTI_TURN_METRICS]
        rejected = GeneratedTurn(rag_input=text(rng, 60), standalone_question=text(rng, 80),
                                 ground_truth=text(rng, 90), question_type="follow_up")
        made.append(Turn(
            index=index,
            generated=GeneratedTurn(
                rag_input=f"Question {index} of {document_id}: {text(rng, 60)}?",
                standalone_question=text(rng, 90) + "?",
                ground_truth=text(rng, 110),
                evidence=text(rng, 150),
                question_type="initial" if index == 1 else "follow_up",
            ),
            answer=RagAnswer(answer=f"Answer {index} of {document_id}: {text(rng, 260)}{evil}",
                             contexts=[text(rng, 400) + evil for _ in range(3)]),
            rejections=[Rejection(turn=rejected, validation=Validation(
                valid=False, categories=["not_standalone", "ground_truth"],
                feedback=f"Rejection {index} of {document_id}: {text(rng, 120)}{evil}"))]
            if index % 2 == 0 else [],
            validated=index != 3,
            judgements={m: Judgement(score=round(rng.random(), 2),
                                     reason=f"{m} reason {index}: {text(rng, 120)}{evil}")
                        for m in metrics},
        ))
    return Dialogue(
        document_id=document_id, role="precise", turns=made,
        scores={m: round(rng.uniform(0.5, 1.0), 4) for m in METRICS},
        usage=Usage(calls=14 * turns, cache_hits=3, prompt_tokens=9000 * turns,
                    completion_tokens=600 * turns, cost=0.0021 * turns),
    )


def band_around(scores: dict[str, float], rng: random.Random) -> BandDoc:
    """A band file whose three runs spread around ``scores``."""
    runs = {}
    for metric, value in scores.items():
        below, above = rng.uniform(0.0, 0.08), rng.uniform(0.0, 0.08)
        spread = [value - below, value + above, value + (above - below) / 2]
        runs[metric] = [round(min(1.0, max(0.0, v)), 4) for v in spread]
    return baseline.band(runs, ProducedBy(turns=3))


def sample_record(documents: int = 3, turns: int = 3, hostile: bool = False) -> RunRecord:
    """A run of one test over ``documents`` documents; the first item regressed."""
    rng = random.Random(7)
    key = "tests/test_bot.py::test_support_bot"
    items = []
    recorded: list[dict[str, float]] = []  # the scores the bands were recorded around
    for n in range(documents):
        doc_id = f"doc-{n}" + (HOSTILE if hostile else "")
        d = dialogue(doc_id, turns, seed=n, hostile=hostile)
        band = band_around(d.scores, rng)
        recorded.append(dict(d.scores))
        if n == 0:  # a regression: correctness far below its band
            d.scores["correctness"] = 0.1
        records = metric_records(d.scores, band, margin=0.02)
        failed = any(m.verdict == "worse" for m in records)
        items.append(ItemRecord(
            nodeid=f"{key}[{doc_id}]", document_id=doc_id,
            outcome="failed" if failed else "passed",
            message=f"scores left their baseline band: correctness = 0.100{HOSTILE * hostile}"
            if failed else "",
            duration_s=12.5 + n, metrics=records, dialogue=d,
        ))
    means = {m: sum(i.dialogue.scores[m] for i in items if i.dialogue) / documents
             for m in METRICS}
    aggregate = band_around({m: sum(s[m] for s in recorded) / documents for m in METRICS}, rng)
    return RunRecord(
        settings={"generator": "openai/gpt-4o-mini", "validator": "gemini/gemini-2.0-flash",
                  "evaluator": "openai/gpt-4o-mini", "turns": str(turns), "role": "precise",
                  "seeds": "0", "record mode": "new", "plugin": "0.1.0"},
        started=datetime(2025, 5, 4, 10, 30, tzinfo=UTC),
        duration_s=754.2,
        tests=[TestRecord(key=key, metrics=metric_records(means, aggregate, margin=0.02),
                          items=items)],
    )


# -- reading the HTML ---------------------------------------------------------------------

VOID = {"meta", "path", "rect", "circle", "br"}


class Page(HTMLParser):
    """Every element (tag, attributes) in document order, the text inside each element
    that has an id, and whether the elements nest properly."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text_by_id: dict[str, str] = {}
        self.text = ""
        self.stack: list[tuple[str, str | None]] = []
        self.misnested: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            element_id = dict(attrs).get("id")
            self.stack.append((tag, element_id))
            if element_id:
                self.text_by_id.setdefault(element_id, "")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1][0] != tag:
            self.misnested.append(tag)
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text += data
        for _, element_id in self.stack:
            if element_id:
                self.text_by_id[element_id] += data

    def having(self, tag: str, cls: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.elements if t == tag and cls in (a.get("class") or "").split()]


# -- the record -----------------------------------------------------------------------------

def test_the_json_round_trips_with_dialogues() -> None:
    record = sample_record(hostile=True)
    again = RunRecord.model_validate_json(record.model_dump_json(indent=2))
    assert again == record
    item = again.tests[0].items[1]
    assert isinstance(item.dialogue, Dialogue)
    assert item.dialogue.turns[1].rejections[0].validation.categories == ["not_standalone",
                                                                      "ground_truth"]


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="extra"):
        RunRecord.model_validate({"settings": {}, "tests": [], "colour": "red"})


@pytest.mark.parametrize("margin", [0.0, 0.05])
def test_verdicts_agree_with_the_plugins_band_check(margin: float) -> None:
    doc = baseline.band({m: [0.4, 0.6] for m in METRICS}, ProducedBy())
    for metric in METRICS:
        for step in range(101):
            value = step / 100
            deviations = baseline.compare(doc, {metric: value}, margin)
            expected = ("in band" if not deviations
                        else "worse" if deviations[0].worse else "better")
            (record,) = metric_records({metric: value}, doc, margin, names=[metric])
            assert record.verdict == expected, (metric, value)


def test_metric_records_name_unscored_and_unbanded_metrics() -> None:
    doc = baseline.band({"correctness": [0.5, 0.7], "faithfulness": [0.9]}, ProducedBy())
    records = metric_records({"forgetfulness": 0.2, "correctness": 0.6}, doc, margin=0.01)
    by_name = {r.name: r for r in records}
    assert [r.name for r in records] == ["correctness", "faithfulness", "forgetfulness"]
    assert by_name["correctness"].verdict == "in band"
    assert by_name["correctness"].band == Band(min=0.5, max=0.7, runs=[0.5, 0.7], margin=0.01)
    assert by_name["faithfulness"].verdict == "not scored"
    assert by_name["forgetfulness"].verdict == "no band"
    assert by_name["forgetfulness"].higher_is_better is False


# -- the HTML -------------------------------------------------------------------------------

def test_the_page_needs_nothing_from_outside() -> None:
    html = render(sample_record())
    page = Page(html)
    tags = {tag for tag, _ in page.elements}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "base", "form"}
    assert not [a for _, attrs in page.elements for a in attrs if a.startswith("on")]
    links = [attrs.get("href") or "" for tag, attrs in page.elements if tag == "a"]
    assert links and all(link.startswith("#") for link in links)
    style = html[html.index("<style>"):html.index("</style>")]
    assert "url(" not in style and "@import" not in style and "//" not in style
    csp = [a["content"] for t, a in page.elements if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == ["default-src 'none'; style-src 'unsafe-inline'"]


def test_model_and_document_text_is_escaped_everywhere() -> None:
    record = sample_record(hostile=True)
    page = Page(render(record))
    assert not page.misnested and not page.stack
    assert not [t for t, _ in page.elements if t in ("script", "img")]
    assert not [a for _, attrs in page.elements for a in attrs if a.startswith("on")]
    # the hostile strings are shown as text, not dropped: in answers, contexts, reasons,
    # feedback, failure messages and document ids
    assert page.text.count(HOSTILE) >= 3 * 3 * (1 + 3 + 4 + 1) + 3
    item = record.tests[0].items[0]
    assert item.document_id.endswith(HOSTILE) and item.document_id in page.text


def test_every_test_item_turn_and_metric_is_shown() -> None:
    record = sample_record(documents=3, turns=3)
    page = Page(render(record))
    test = record.tests[0]
    assert test.key in page.text
    items = page.having("details", "item")
    assert len(items) == 3
    for item in test.items:
        shown = [page.text_by_id[a["id"] or ""] for a in items
                 if item.nodeid in page.text_by_id[a["id"] or ""]]
        assert len(shown) == 1, item.nodeid
        body = shown[0]
        assert item.dialogue is not None
        for metric in item.metrics:
            assert metric.name in body and f"{metric.value:.3f}" in body
        for turn in item.dialogue.turns:
            generated = turn.generated
            for piece in (generated.rag_input, generated.standalone_question,
                          generated.ground_truth, generated.evidence, turn.answer.answer,
                          *turn.answer.contexts, *(j.reason for j in turn.judgements.values()),
                          *(r.validation.feedback for r in turn.rejections)):
                assert piece in body
            assert f"Turn {turn.index}" in body
    assert len(page.having("li", "turn")) == 9
    # the aggregate table and one table per item, one chart per metric in each
    assert len(page.having("table", "mt")) == 1 + 3
    assert len(page.having("svg", "ch")) == 6 * (1 + 3)
    assert "unvalidated" in page.text and "not_standalone" in page.text


def test_failing_items_come_first_and_open_and_worse_metrics_lead() -> None:
    record = sample_record(documents=4, turns=2)
    test = record.tests[0]
    test.items.reverse()  # the failing item (doc-0) last
    page = Page(render(record))
    items = page.having("details", "item")
    assert "doc-0" in page.text_by_id[items[0]["id"] or ""]
    assert "open" in items[0] and "fail" in (items[0]["class"] or "")
    assert all("open" not in a for a in items[1:])
    rows = page.having("tr", "r-worse")
    assert rows, "the regressed item shows a worse row"
    first_rows = [a for t, a in page.elements if t == "tr" and (a.get("class") or "")
                  .startswith("r-")]
    # in the first item's table (after the aggregate's), worse comes first
    aggregate = len(test.metrics)
    assert first_rows[aggregate]["class"] == "r-worse"


def test_a_passing_run_has_everything_collapsed() -> None:
    record = sample_record(documents=2, turns=2)
    record.tests[0].items = record.tests[0].items[1:]
    page = Page(render(record))
    assert not [a for t, a in page.elements if t == "details" and "open" in a]


def test_an_empty_run_renders() -> None:
    page = Page(render(RunRecord()))
    assert not page.misnested and "0 tests, 0 items" in " ".join(page.text.split())


def test_charts_place_band_margin_runs_and_today_on_the_unit_axis() -> None:
    metric = MetricRecord.judge(
        "correctness", 0.25, Band(min=0.4, max=0.6, runs=[0.4, 0.5, 0.6], margin=0.1))
    c = chart(metric)
    assert metric.verdict == "worse"
    assert c.band == pytest.approx((65.0, 30.0))
    assert c.margin == pytest.approx((50.0, 60.0))
    assert c.runs == pytest.approx([65.0, 80.0, 95.0])
    assert c.today == pytest.approx(42.5)
    # a band of one value stays visible; values past the axis are clamped to it
    flat = chart(MetricRecord.judge("correctness", None, Band(min=1.0, max=1.0, margin=0.5)))
    assert flat.band == pytest.approx((153.0, 2.0)) and flat.today is None
    assert flat.margin is not None and flat.margin[0] + flat.margin[1] == pytest.approx(155.0)


@pytest.mark.parametrize(("documents", "turns", "limit_kb"), [(3, 3, 90), (20, 5, 700)])
def test_report_size(documents: int, turns: int, limit_kb: int) -> None:
    record = sample_record(documents, turns)
    html = render(record)
    size = len(html.encode())
    carried = sum(len(t.model_dump_json()) for test in record.tests for i in test.items
                  if i.dialogue for t in i.dialogue.turns)
    print(f"\n{documents} dialogues x {turns} turns: {size / 1024:.0f} KiB HTML, "
          f"turn data as JSON {carried / 1024:.0f} KiB")
    assert size < limit_kb * 1024
    assert size < 1.5 * carried + 40_000  # markup stays small beside what it shows


# -- a real browser -------------------------------------------------------------------------

CHROMIUM = next((shutil.which(name) for name in
                 ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
                 if shutil.which(name)), None)


def browse(page: Path, profile: Path, *options: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
         "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr",
         # tests never touch the network: no background traffic, and no host resolves
         "--disable-background-networking", "--disable-component-update", "--no-pings",
         "--dns-prefetch-disable", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--v=0", *options, page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Uncaught" in line or "Content Security Policy" in line]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary")
def test_headless_chromium_shows_the_report_without_errors(tmp_path: Path) -> None:
    # first prove that a script's error would be seen
    control = tmp_path / "control.html"
    control.write_text("<!DOCTYPE html><p>x</p><script>console.error('boom');"
                       "undefined_name()</script>")
    seen = browse(control, tmp_path / "profile0", "--dump-dom")
    assert console_errors(seen.stderr), seen.stderr[-2000:]

    record = sample_record(documents=3, turns=3, hostile=True)
    report = tmp_path / "report.html"
    report.write_text(render(record), encoding="utf-8")
    result = browse(report, tmp_path / "profile1", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not console_errors(result.stderr), console_errors(result.stderr)
    dom = Page(result.stdout)  # the page as the browser parsed it
    assert not [t for t, _ in dom.elements if t in ("script", "img")]
    assert not [a for _, attrs in dom.elements for a in attrs if a.startswith("on")]
    assert len(dom.having("details", "item")) == 3 and len(dom.having("li", "turn")) == 9
    for item in record.tests[0].items:
        assert item.nodeid in dom.text
    assert dom.text.count(HOSTILE) >= 3 * 3 * (1 + 3 + 4 + 1)

    # and were escaping ever to fail, the page's policy would stop the script it let in
    injected = tmp_path / "injected.html"
    injected.write_text(render(record).replace(
        "</main>", "<script>console.log('ran')</script></main>"), encoding="utf-8")
    result = browse(injected, tmp_path / "profile2", "--dump-dom")
    assert '"ran"' not in result.stderr
    assert any("Content Security Policy" in line for line in console_errors(result.stderr))

    shot = tmp_path / "report.png"
    result = browse(report, tmp_path / "profile3", f"--screenshot={shot}",
                    "--window-size=1200,1800", "--hide-scrollbars")
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


# -- written by the plugin ----------------------------------------------------------------------

HOSTILE_BOT = '''
class HostileBot:
    def answer(self, question, history):
        return ragdive.RagAnswer(answer=f"<script>alert('bot')</script> {question}",
                                 contexts=["</details><img src=x onerror=alert(1)>"])

@pytest.fixture(scope="session")
def ragdive_adapter():
    return HostileBot()
'''


def test_the_plugin_writes_both_reports_and_escapes_what_the_bot_said(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import PROJECT_CONFTEST, PROJECT_TEST

    monkeypatch.setenv("BOT_MODE", "good")
    pytester.makeconftest(PROJECT_CONFTEST + HOSTILE_BOT)
    pytester.makepyfile(test_bot=PROJECT_TEST)
    pytester.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    result = pytester.runpytest("-m", "ragdive", "--ragdive-report=out/report.html",
                                "--ragdive-json=out/run.json")
    result.assert_outcomes(passed=3)  # two items and the test's verdict
    result.stdout.fnmatch_lines(["*ragdive report written to*report.html*"])

    record = RunRecord.model_validate_json((pytester.path / "out" / "run.json").read_text())
    (test,) = record.tests
    assert test.key == "test_bot.py::test_bot"
    assert [(i.document_id, i.outcome) for i in test.items] == [("alpha", "passed"),
                                                                ("beta", "passed")]
    assert all(i.dialogue is not None and len(i.dialogue.turns) == 2 for i in test.items)
    assert {m.verdict for i in test.items for m in i.metrics} == {"in band"}
    assert [m.name for m in test.metrics] == list(METRICS)

    page = Page((pytester.path / "out" / "report.html").read_text())
    assert not [tag for tag, _ in page.elements if tag in ("script", "img")]
    assert not [a for _, attrs in page.elements for a in attrs if a.startswith("on")]
    assert "<script>alert('bot')</script>" in page.text
    assert "test_bot.py::test_bot[alpha]" in page.text and "test_bot.py::test_bot[beta]" in page.text
