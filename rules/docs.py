"""The rule reference page (``docs/rules.md``), generated from the rules themselves.

Each rule's docstring gives the three parts (what it flags, why MindSpore cares, how to
migrate) and its ``VALID`` / ``INVALID`` examples become the code blocks, so the page and
the tests can never disagree. Every rule has an HTML anchor ``<a id="ms201"></a>``; SARIF
``helpUri`` and the HTML report link to it on the published page (:func:`rule_doc_url`),
and ``msready rule MS201`` prints one rule's section (:func:`rule_text`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Mapping, Sequence

from msready.analyzer.findings import Category
from msready.rules.base import Example, Rule
from msready.rules.registry import all_rules

DOCS_PATH = "docs/rules.md"
# Where docs/rules.md is published; the ``Documentation`` URL in pyproject.toml's
# ``[project.urls]`` (a test keeps the two equal). SARIF ``helpUri`` must be absolute.
DOCS_URL = "https://github.com/msready/msready/blob/main/docs/rules.md"
REGENERATE = "python tools/gen_rule_docs.py"
FAMILY_TITLES = {
    Category.API_MAPPING: "API mapping (1xx)",
    Category.DYNAMIC_SHAPE: "Dynamic shape (2xx)",
    Category.SPARSE: "Sparse tensors (3xx)",
    Category.SECOND_ORDER: "Second-order gradients (4xx)",
    Category.GRAPH_SYNTAX: "Graph-mode syntax (5xx)",
    Category.IDIOM: "Porting idioms (6xx)",
}
PART_TITLES = ("What it flags", "Why MindSpore cares", "How to migrate")
# Findings the engine itself produces, without a rule class.
BUILTIN_FINDINGS = (
    ("MS000", "parse-error", "A file msready could not read or parse (Python 2, a bad "
     "encoding, a binary file, a notebook that is not JSON). The finding carries the line "
     "and column of the problem; none of that file's code is checked until it parses "
     "as Python 3."),
    ("MS001", "rule-crashed", "One of msready's rules failed on a file. Only that rule's "
     "findings for that file are missing; check the hazard by hand and report the "
     "failure to msready."),
)


def rule_anchor(rule_id: str) -> str:
    """The HTML anchor of a rule's section (``ms201``)."""
    return rule_id.lower()


def rule_doc_url(rule_id: str) -> str:
    """The absolute URL of a rule's section of the published rule documentation."""
    return f"{DOCS_URL}#{rule_anchor(rule_id)}"


def docstring_parts(rule: type[Rule]) -> list[str]:
    """The docstring's paragraphs, each unwrapped onto one line."""
    doc = inspect.cleandoc(rule.__doc__ or "")
    paragraphs = [p for p in re.split(r"\n\s*\n", doc) if p.strip()]
    return [" ".join(line.strip() for line in p.splitlines()) for p in paragraphs]


def _fence(code: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    return "`" * max(3, longest + 1)


def _code_block(code: str) -> list[str]:
    fence = _fence(code)
    return [f"{fence}python", code.rstrip("\n"), fence, ""]


def _examples(title: str, examples: Sequence[Example]) -> list[str]:
    if not examples:
        return []
    lines = [f"**{title}**", ""]
    for example in examples:
        if isinstance(example, Mapping):
            lines += [f"*One example of {len(example)} files:*", ""]
            for path, source in example.items():
                if source.strip():
                    lines += [f"`{path}`:", "", *_code_block(source)]
                else:
                    lines += [f"`{path}`: (empty)", ""]
        else:
            lines += _code_block(example)
    return lines


def _rule_section(rule: type[Rule]) -> list[str]:
    parts = docstring_parts(rule)
    lines = [f'<a id="{rule_anchor(rule.id)}"></a>', "", f"### {rule.id} `{rule.name}`", "",
             "| category | severity | confidence | scope |", "|---|---|---|---|",
             f"| {rule.category.value} | {rule.severity.value} | {rule.confidence.value} "
             f"| {rule.scope.value} |", ""]
    for i, text in enumerate(parts):
        title = PART_TITLES[i] if i < len(PART_TITLES) else None
        lines += [f"**{title}.** {text}" if title else text, ""]
    lines += _examples("Reported (INVALID examples)", rule.INVALID)
    lines += _examples("Not reported (VALID examples)", rule.VALID)
    return lines


def _families(rules: Iterable[type[Rule]]) -> list[tuple[str, list[type[Rule]]]]:
    groups: dict[str, list[type[Rule]]] = {}
    for rule in rules:
        title = FAMILY_TITLES.get(rule.category, rule.category.value)
        groups.setdefault(title, []).append(rule)
    return sorted(groups.items(), key=lambda item: item[1][0].id)


def render_rule_docs(rules: Sequence[type[Rule]] | None = None) -> str:
    """The full Markdown text of ``docs/rules.md`` for ``rules`` (default: every rule)."""
    families = _families(rules if rules is not None else all_rules())
    lines = ["# msready rules", "",
             f"Generated from the rules' docstrings and examples by `{REGENERATE}`; "
             "do not edit by hand. Severity is the migration effort, confidence how sure "
             "msready is that the construct is the torch one, and scope `forward` means the "
             "finding is kept only when a `forward` reaches the code (the report shows the "
             "call path).", "",
             "Silence one finding with `# msready: ignore[MS501]` (a rule id, a rule name "
             "or a category) at the end of its line, or a whole rule with `disable = "
             "[\"MS501\"]` under `[tool.msready]` in the scanned repository's "
             "pyproject.toml.", "", "## Contents", ""]
    for title, members in families:
        lines += [f"**{title}**", "", "| rule | name | severity | scope |", "|---|---|---|---|"]
        lines += [f"| [{r.id}](#{rule_anchor(r.id)}) | `{r.name}` | {r.severity.value} "
                  f"| {r.scope.value} |" for r in members]
        lines.append("")
    lines += ["**Engine findings**", "", "| rule | name |", "|---|---|"]
    lines += [f"| [{i}](#{rule_anchor(i)}) | `{n}` |" for i, n, _ in BUILTIN_FINDINGS]
    lines.append("")
    for title, members in families:
        lines += [f"## {title}", ""]
        for rule in members:
            lines += _rule_section(rule)
    lines += ["## Engine findings", ""]
    for rule_id, name, text in BUILTIN_FINDINGS:
        lines += [f'<a id="{rule_anchor(rule_id)}"></a>', "", f"### {rule_id} `{name}`", "",
                  text, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def rule_text(rule_id: str, rules: Sequence[type[Rule]] | None = None) -> str | None:
    """One rule's documentation (what it flags, why MindSpore cares, how to migrate, its
    examples) as Markdown, for ``msready rule MS201``; a rule name (``masked-select``) works
    too. None when no rule or engine finding has that id or name."""
    wanted = rule_id.strip().lower()
    for rule in rules if rules is not None else all_rules():
        if wanted in (rule.id.lower(), rule.name.lower()):
            lines = _rule_section(rule)[2:]  # without the HTML anchor
            return "\n".join([*lines, f"Online: {rule_doc_url(rule.id)}"]) + "\n"
    for builtin_id, name, text in BUILTIN_FINDINGS:
        if wanted in (builtin_id.lower(), name):
            return (f"### {builtin_id} `{name}`\n\n{text}\n\n"
                    f"Online: {rule_doc_url(builtin_id)}\n")
    return None
