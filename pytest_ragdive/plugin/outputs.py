"""The session's record and the files it goes to (``--ragdive-report``, ``--ragdive-json``,
``--ragdive-markdown``), for a session and for a merge of shard records alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import __version__
from ..files import atomic_write_text
from . import html_report, markdown
from .records import ItemResult
from .run_record import RunRecord


def settings(results: Mapping[str, ItemResult], *, seed: int, update: bool,
             record_mode: str, verdict: str, alpha: float, margin: float) -> dict[str, str]:
    """What shaped the run, as the record states it (a merge refuses records that differ)."""

    def values(of: Sequence[object]) -> str:
        return ", ".join(sorted({str(value) for value in of}))

    judges: dict[str, str] = next((r.judges for r in results.values()), {})
    dialogues = {"turns": values([r.turns_per_dialogue for r in results.values()]),
                 "role": values([r.role for r in results.values()])}
    return {  # what only a dialogue tells is left out when none ran (a merge then fills it)
        **{role: str(model) for role, model in judges.items()},
        **{key: value for key, value in dialogues.items() if value},
        "plugin": __version__,
        "seeds": f"{seed}" if not update else f"{seed} and on (update)",
        "record mode": record_mode,
        "verdict": verdict, "alpha": f"{alpha:g}", "band margin": f"{margin:g}",
    }


def write(run: RunRecord, html: str, json_path: str, markdown: str = "",
          unused: Sequence[str] = ()) -> list[Path]:
    """Write the HTML report, the JSON record and the Markdown verdicts where asked (the
    Markdown lists the ``unused`` band files too); the paths written."""
    written = []
    for path, make in ((html, lambda: _html(run)),
                       (json_path, lambda: run.model_dump_json(indent=2)),
                       (markdown, lambda: _markdown(run, unused))):
        if path:
            target = Path(path) if Path(path).is_absolute() else Path.cwd() / path
            atomic_write_text(target, make())
            written.append(target)
    return written


def _html(run: RunRecord) -> str:
    return html_report.render(run)


def _markdown(run: RunRecord, unused: Sequence[str]) -> str:
    return markdown.render(run, unused)
