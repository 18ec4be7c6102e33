"""Write docs/rules.md from the rules' docstrings and examples.

Run from anywhere: ``python tools/gen_rule_docs.py`` (``--check`` exits 1 when the
committed page is stale instead of writing it). ``tests/test_rule_docs.py`` fails
when the page and the rules disagree.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from msready.rules.docs import DOCS_PATH, render_rule_docs

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["main", "render_rule_docs"]


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or with ``--check`` verify) docs/rules.md; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/rules.md is out of date; write nothing")
    args = parser.parse_args(argv)
    target = ROOT / DOCS_PATH
    text = render_rule_docs()
    current = target.read_text(encoding="utf-8") if target.is_file() else None
    if args.check:
        if current != text:
            print(f"{DOCS_PATH} is stale: run `python tools/gen_rule_docs.py`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {DOCS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
