"""The session's record and the files it goes to (``--ragdive-report``, ``--ragdive-json``),
for a session and for a merge of shard records alike."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .run_record import RunRecord


def settings(results: Mapping[str, Mapping[str, Any]], *, seed: int, update: bool,
             record_mode: str, verdict: str, alpha: float, margin: float) -> dict[str, str]:
    """What shaped the run, as the record states it (a merge refuses records that differ)."""
    from .. import __version__

    def values(key: str) -> str:
        return ", ".join(sorted({str(r[key]) for r in results.values()}))

    judges: dict[str, str] = next((r["judges"] for r in results.values()), {})
    dialogues = {"turns": values("turns_per_dialogue"), "role": values("role")}
    return {  # what only a dialogue tells is left out when none ran (a merge then fills it)
        **{role: str(model) for role, model in judges.items()},
        **{key: value for key, value in dialogues.items() if value},
        "plugin": __version__,
        "seeds": f"{seed}" if not update else f"{seed} and on (update)",
        "record mode": record_mode,
        "verdict": verdict, "alpha": f"{alpha:g}", "band margin": f"{margin:g}",
    }


def write(run: RunRecord, html: str, json_path: str) -> list[Path]:
    """Write the HTML report and the JSON record where asked; the paths written."""
    from ..files import atomic_write_text
    from .html_report import render

    written = []
    for path, text in ((html, render(run) if html else ""),
                       (json_path, run.model_dump_json(indent=2) if json_path else "")):
        if path:
            target = Path(path) if Path(path).is_absolute() else Path.cwd() / path
            atomic_write_text(target, text)
            written.append(target)
    return written
