"""What ``msready table`` prints: the whole table for one backend, or one entry explained."""

from __future__ import annotations

import json

from msready.analyzer.apitable import BACKENDS, ApiEntry, ApiTable, ParamDiff, load_table

TSV_COLUMNS = ("torch", "mindspore", "status", "platforms", "notes")


def _row(entry: ApiEntry, target: str) -> dict[str, object]:
    tgt = entry.target(target)
    return {"torch": entry.torch, "mindspore": tgt.api, "status": entry.status_for(target),
            "platforms": list(tgt.platforms), "notes": entry.notes}


def render_table(fmt: str, target: str, table: ApiTable | None = None) -> str:
    """The table for one backend as ``json`` (a list of entries) or ``tsv`` (a header and
    one line per entry). The status is the backend's: no target there means ``missing``."""
    if target not in BACKENDS:
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(BACKENDS)}")
    rows = [_row(e, target) for e in (table or load_table()).entries()]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    if fmt == "tsv":
        lines = ["\t".join(TSV_COLUMNS)]
        for row in rows:
            cells = [row["torch"], row["mindspore"] or "", row["status"],
                     ",".join(row["platforms"]),  # type: ignore[arg-type]
                     row["notes"]]
            lines.append("\t".join(" ".join(str(c).split()) for c in cells))
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r}; expected json or tsv")


def describe_param(diff: ParamDiff) -> str:
    """One parameter difference in words."""
    if diff.kind == "renamed":
        text = f"`{diff.torch}` is called `{diff.mindspore}`"
    elif diff.kind == "missing":
        text = f"`{diff.torch}` does not exist in MindSpore"
    elif diff.kind == "default":
        text = (f"`{diff.torch}` defaults to {diff.torch_default} in torch but "
                f"`{diff.mindspore}` to {diff.mindspore_default} in MindSpore")
    else:
        text = f"`{diff.torch}` means something else"
        if diff.mindspore and diff.mindspore != diff.torch:
            text += f" (MindSpore: `{diff.mindspore}`)"
    if diff.note:
        text += f": {diff.note}"
    if diff.backends:
        text += f" [{', '.join(diff.backends)}]"
    return text


def explain(symbol: str, target: str | None = None, table: ApiTable | None = None) -> str | None:
    """A readable explanation of one entry (all backends, or only ``target``); None when the
    table does not know the symbol."""
    entry = (table or load_table()).lookup(symbol)
    if entry is None:
        return None
    backends = (target,) if target else BACKENDS
    title = entry.torch if entry.torch == symbol else f"{symbol} (= {entry.torch})"
    lines = [f"{title}  [{entry.kind}]"]
    for backend in backends:
        tgt = entry.target(backend)
        where = f"  runs on: {', '.join(tgt.platforms)}" if tgt.platforms else ""
        lines.append(f"  {backend:<7} {entry.status_for(backend):<10} "
                     f"{tgt.api or '(no MindSpore target)'}{where}")
    diffs = [d for d in entry.params if target is None or d.applies_to(target)]
    if diffs:
        lines.append("Parameter differences:")
        lines += [f"  - {describe_param(d)}" for d in diffs]
    forms = [f for f in entry.measured_forms if target is None or f.applies_to(target)]
    if forms:
        lines.append("Call forms measured on CPU:")
        for form in forms:
            keywords = ", ".join(f"{k}=" for k in form.keywords) or "no keywords"
            only = f" [{', '.join(form.backends)}]" if form.backends else ""
            lines.append(f"  - {form.positional} positional, {keywords}: {form.note}{only}")
    if entry.notes:
        lines.append(f"Notes: {entry.notes}")
    if entry.workaround:
        lines.append(f"Workaround ({entry.workaround}): {entry.suggestion}")
    elif entry.suggestion:
        lines.append(f"Suggestion: {entry.suggestion}")
    return "\n".join(lines)
