"""``python -m pytest_ragdive merge shard-*.json --report report.html --json run.json``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_ragdive")
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser(
        "merge", help="decide the verdicts of CI shards' --ragdive-json records as one run")
    merge.add_argument("records", nargs="+", help="the --ragdive-json file of each shard")
    merge.add_argument("--report", default="", help="write the HTML report here")
    merge.add_argument("--json", default="", help="write the merged record here")
    args = parser.parse_args(argv)
    from .plugin.merge import main as merge_records

    return merge_records(args.records, html=args.report, json_path=args.json)


if __name__ == "__main__":
    sys.exit(main())
