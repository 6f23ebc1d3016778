"""``python -m pytest_ragdive merge shard-*.json --report report.html --json run.json``
(``--markdown summary.md``);
``python -m pytest_ragdive calibrate --model NAME`` (:mod:`.calibrate`)."""

from __future__ import annotations

import argparse
import sys

from . import calibrate
from .plugin.merge import main as merge_records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_ragdive")
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser(
        "merge", help="decide the verdicts of CI shards' --ragdive-json records as one run")
    merge.add_argument("records", nargs="+", help="the --ragdive-json file of each shard")
    merge.add_argument("--report", default="", help="write the HTML report here")
    merge.add_argument("--json", default="", help="write the merged record here")
    merge.add_argument("--markdown", default="",
                       help="write the verdicts as Markdown here (a job summary, a comment)")
    calibrate.add_parser(commands)
    args = parser.parse_args(argv)
    if args.command == "calibrate":
        return calibrate.main(args)

    return merge_records(args.records, html=args.report, json_path=args.json,
                         markdown=args.markdown)


if __name__ == "__main__":
    sys.exit(main())
