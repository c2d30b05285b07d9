"""Reports as text: a rich table on a terminal, plain aligned columns when piped, or JSON.

Both text forms are built from the same sections (a title, column headers, rows), so they
always say the same thing; rich is imported only when a terminal will show it.

Every `--json` report is one object of one shape, whatever the command and however many
inputs (docs/input-output.md#json-reports):

    {"version": 1, "command": "estimate", "files": [{"file": "a.json", ...}, ...]}

`version` changes only when a key is removed or changes meaning; a command may add keys beside
`files` (estimate: `total`). A rewriting command's `--report FILE` is JSON Lines instead, one
object per file as it is done, with `version` and `command` in each (`report_line`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..core.errors import shown_name, without_credentials
from ..core.words import counted

if TYPE_CHECKING:
    from ..ops.diff import BlockChange, MessageChange
    from ..ops.estimate import Estimate
    from ..ops.sessions import Listing
    from ..run.batch import Tally
    from ..run.tasks import Outcome

JSON_VERSION = 1


def report_json(command: str, files: Iterable[tuple[str, Mapping[str, Any]]], **extra: Any) -> bytes:
    """The JSON report of a run: `version`, `command`, then `files`, one object per input in the
    order read (its `file` first, then what the command reports of it), then `extra`; indented,
    one object, a newline at the end."""
    envelope = {"version": JSON_VERSION, "command": command,
                "files": [{"file": name, **fields} for name, fields in files], **extra}
    return orjson.dumps(envelope, option=orjson.OPT_INDENT_2) + b"\n"


def report_line(command: str, outcome: Outcome) -> bytes:
    """One file's line of a rewriting command's `--report`: what became of it (`status`: changed,
    unchanged or failed; `exit`; `output`, where it went, and whether it was `written`; `error`),
    then what the command reports of it (strategy, tokens and messages before and after, …)."""
    fields: dict[str, Any] = {
        "version": JSON_VERSION, "command": command, "file": outcome.name, "status": outcome.status,
        "exit": int(outcome.exit),
        "output": outcome.target if outcome.target is not None or outcome.failed else "<stdout>",
        "written": outcome.written,
        "error": outcome.error_of_the_file,
    }
    if outcome.result is not None:
        fields.update(outcome.result.report)
    return without_credentials(orjson.dumps(fields).decode()).encode() + b"\n"


def where(index: int | None, line: int | None) -> str:
    """The part of a report line between the file name and the rule: `:12: message 3: `."""
    if line is not None and index is not None:
        return f":{line}: message {index}: "
    if line is not None:
        return f":{line}: "
    if index is not None:
        return f": message {index}: "
    return ": "


def batch_summary(tally: Tally, verb: str, *, dry_run: bool, seconds: float) -> str:
    """The closing line of a batch: `12 files: 9 compacted, 2 unchanged, 1 failed; 3 fell back to
    the emergency mode (no Anthropic API key); 1,203,118 → 160,442 tokens; 3.1 s`."""
    files = tally.changed + tally.unchanged + tally.failed
    text = (f"{counted(files, 'file')}: {tally.changed:,} {'would be ' if dry_run else ''}{verb}, "
            f"{tally.unchanged:,} unchanged, {tally.failed:,} failed")
    if tally.fell_back:
        text += f"; {tally.fell_back:,} {'would fall' if dry_run else 'fell'} back to {tally.first_fallback}"
    if tally.counted:
        text += f"; {tally.tokens_before:,} → {tally.tokens_after:,} tokens"
    return f"{text}; {seconds:.1f} s"


def diff_fields(changes: Sequence[MessageChange]) -> dict[str, Any]:
    """One file's entry of `--diff --json` (after its `file`): its changes, message by message."""
    return {"changes": [change.as_dict() for change in changes]}


def diff_text(name: str, changes: Sequence[MessageChange], *, color: bool, rewritten: bool = False) -> bytes:
    """`--diff` of one file, unified-diff-like (nothing when nothing changes): `---`/`+++` naming
    it, then a `-` or `+` line per message removed or added, and for a message changed, an `@@`
    line and a `-` and/or `+` line per block. Each line: what it is, its tokens, an excerpt
    (from its first difference, for a block replaced). Colored as git colors a diff, on a terminal.
    `rewritten`: the file's bytes change though no message does (a log's links repaired): said so."""
    if not changes and not rewritten:
        return b""

    def styled(line: str, **style: Any) -> str:
        import click

        return click.style(line, **style) if color else line

    lines = [styled(f"--- {name}", bold=True), styled(f"+++ {name}", bold=True)]
    if not changes:
        lines.append(styled("@@ no message changes: only how the log's lines hold them (links, ids, order) @@", fg="cyan"))
    for change in changes:
        if change.action != "changed":
            sign, index, tokens = ("-", change.index_before, change.tokens_before) if change.action == "removed" else \
                ("+", change.index_after, change.tokens_after)
            side = "excerpt_before" if sign == "-" else "excerpt_after"
            kinds = ", ".join(_block_name(block) for block in change.blocks)
            shown = next((getattr(block, side) for block in change.blocks if getattr(block, side)), "")
            lines.append(styled(_with_excerpt(f"{sign}message {index} {change.role}, {_n(tokens)} tokens: {kinds}", shown),
                                fg="red" if sign == "-" else "green"))
            continue
        moved = f" (now {change.index_after})" if change.index_after != change.index_before else ""
        lines.append(styled(f"@@ message {change.index_before}{moved} {change.role}: {_n(change.tokens_before)} → "
                            f"{_n(change.tokens_after)} tokens @@", fg="cyan"))
        for block in change.blocks:
            if block.block_before is not None:
                lines.append(styled(_with_excerpt(f"- block {block.block_before} {_block_name(block, before=True)}, "
                                                  f"{_n(block.tokens_before)} tokens", block.excerpt_before), fg="red"))
            if block.block_after is not None:
                lines.append(styled(_with_excerpt(f"+ block {block.block_after} {_block_name(block)}, "
                                                  f"{_n(block.tokens_after)} tokens", block.excerpt_after), fg="green"))
    return ("\n".join(lines) + "\n").encode()


def _with_excerpt(head: str, excerpt: str | None) -> str:
    return f"{head}: {excerpt}" if excerpt else head


def _block_name(block: BlockChange, before: bool = False) -> str:
    """`tool_result bash toolu_01`: the kind, and for a tool's block its tool and call id (`before`:
    the id it had, where the rewrite renamed it)."""
    call_id = block.tool_call_id_before if before and block.tool_call_id_before else block.tool_call_id
    return " ".join(part for part in (block.kind, block.tool, call_id) if part)


@dataclass(frozen=True)
class Section:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()  # per column: right-align


def _n(value: int) -> str:
    return f"{value:,}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def summary(e: Estimate) -> Section:
    rows = [
        ("tokens", f"{_n(e.tokens)} — {_pct(e.tokens, e.budget)} of the input budget"),
        ("input budget", f"{_n(e.budget)} (window {_n(e.window)} − max output {_n(e.max_output)})"),
        ("status", f"{e.status} (warning from {_n(e.warning)}, compaction threshold {_n(e.threshold)}, "
                   "emergency at 95% of the budget)"),
        ("counted by", e.method),
    ]
    if e.recorded:
        r = e.recorded
        rows.append(("recorded", f"{_n(r.tokens)} input + {_n(r.output)} output tokens at message {r.message} "
                                  f"(the last of {r.responses} responses with usage)"))
    if e.calibration:
        c = e.calibration
        error = (f"error {100 * c.error:.1f}% on the later {c.error_samples} responses, fitted on the earlier ones"
                 if c.error is not None else "too few responses to measure its error")
        frame = f"frame {c.frame:.1f} a block, " if round(c.frame, 1) else ""
        rows.append(("calibration", f"ratio {c.ratio:.4f}, {frame}overhead {_n(round(c.overhead))}, {c.samples} responses; {error}"))
    rows += [("note", note) for note in e.notes]
    return Section(f"{e.name}: {e.format}, {counted(e.messages, 'message')}", ("", ""), tuple(rows))


def breakdown(e: Estimate) -> list[Section]:
    from ..counting.counter import KINDS

    # The messages' roles, largest first, then what no message holds (the system prompt and tools,
    # the overhead: the same figures as by kind).
    outside = ("system_and_tools", "overhead")
    roles = sorted(((r, t) for r, t in e.by_role.items() if r not in outside), key=lambda kv: -kv[1])
    roles += [(r, e.by_role[r]) for r in outside if e.by_role.get(r, 0)]
    # Shares of what the transcript holds: a negative overhead (recorded usage below the content)
    # would put them above 100 %.
    whole = max(e.tokens, sum(t for t in e.by_kind.values() if t > 0))
    sections = [
        Section("by role", ("role", "tokens", "share"),
                tuple((role.replace("_", " "), _n(t), _pct(t, whole)) for role, t in roles), (False, True, True)),
        Section("by kind", ("kind", "tokens", "share"),
                tuple((k.replace("_", " "), _n(e.by_kind[k]), _pct(e.by_kind[k], whole)) for k in KINDS if e.by_kind[k]),
                (False, True, True)),
    ]
    if e.top_results:
        sections.append(Section(
            f"largest tool results (top {len(e.top_results)})", ("message", "tool", "tool call id", "tokens"),
            tuple((str(r.index), r.tool or "?", r.tool_call_id, _n(r.tokens)) for r in e.top_results),
            (True, False, False, True),
        ))
    return sections


def per_message(e: Estimate) -> Section:
    with_lines = any(m.line is not None for m in e.per_message)
    headers = ("message", "line", "role", "tokens", "running") if with_lines else ("message", "role", "tokens", "running")
    rows = tuple(
        ((str(m.index), str(m.line or "")) if with_lines else (str(m.index),)) + (m.role, _n(m.tokens), _n(m.running))
        for m in e.per_message
    )
    numeric = (True, True, False, True, True) if with_lines else (True, False, True, True)
    return Section("per message", headers, rows, numeric)


def files(estimates: Sequence[Estimate]) -> Section:
    rows = tuple(
        (e.name, e.format, _n(e.messages), _n(e.tokens), _pct(e.tokens, e.budget), e.status) for e in estimates
    )
    total = ("total", "", _n(sum(e.messages for e in estimates)), _n(sum(e.tokens for e in estimates)), "", "")
    return Section(f"{len(estimates)} files", ("file", "format", "messages", "tokens", "budget", "status"),
                   rows + (total,), (False, False, True, True, True, False))


def estimate_sections(estimates: Sequence[Estimate], *, show_messages: bool) -> list[Section]:
    if len(estimates) > 1:
        out = [files(estimates)]
        if show_messages:
            out += [s for e in estimates for s in (summary(e), per_message(e))]
        return out
    e = estimates[0]
    return [summary(e), *breakdown(e), *([per_message(e)] if show_messages else [])]


def plain(sections: Sequence[Section]) -> str:
    """Aligned columns with two-space gutters; a blank line between sections."""
    blocks = []
    for section in sections:
        lines = [section.title]
        table = ([section.headers] if any(section.headers) else []) + list(section.rows)
        widths = [max(len(row[i]) for row in table) for i in range(len(section.headers))]
        for row in table:
            cells = []
            for i, cell in enumerate(row):
                right = i < len(section.numeric) and section.numeric[i]
                last = i == len(row) - 1
                cells.append(cell.rjust(widths[i]) if right else (cell if last else cell.ljust(widths[i])))
            lines.append(("  " + "  ".join(cells)).rstrip())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def rich_print(sections: Sequence[Section]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    # Text, not str: a file or tool name is shown as it is, never read as markup (`[/x]`, `[copy]`).
    for section in sections:
        headed = any(section.headers)
        table = Table(title=Text(section.title), title_justify="left", show_header=headed, box=box.SIMPLE_HEAD if headed else None,
                      pad_edge=False, title_style="bold")
        for i, header in enumerate(section.headers):
            right = i < len(section.numeric) and section.numeric[i]
            table.add_column(header, justify="right" if right else "left", style="bold" if not headed and i == 0 else None)
        for row in section.rows:
            table.add_row(*map(Text, row))
        console.print(table)
        console.print()


def estimate_json(estimates: Sequence[Estimate], *, show_messages: bool) -> bytes:
    total = {"files": len(estimates), "messages": sum(e.messages for e in estimates),
             "tokens": sum(e.tokens for e in estimates)}
    return report_json("estimate", ((e.name, _as_dict(e, show_messages)) for e in estimates), total=total)


def _as_dict(e: Estimate, show_messages: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "format": e.format,
        "dialect": e.dialect,
        "tokenizer": e.tokenizer,
        "method": e.method,
        "ratio": e.ratio,
        "tokens": e.tokens,
        "messages": e.messages,
        "window": e.window,
        "max_output": e.max_output,
        "budget": e.budget,
        "fraction": round(e.fraction, 6),
        "threshold": e.threshold,
        "warning": e.warning,
        "status": e.status,
        "by_role": e.by_role,
        "by_kind": e.by_kind,
        "top_results": [asdict(r) for r in e.top_results],
        "recorded": asdict(e.recorded) if e.recorded else None,
        "calibration": asdict(e.calibration) if e.calibration else None,
        "notes": list(e.notes),
    }
    if show_messages:
        out["per_message"] = [asdict(m) for m in e.per_message]
    return out


# --- sessions -----------------------------------------------------------------------------------


def sessions_json(listing: Listing) -> bytes:
    """`sessions --json`: the envelope, a `files` entry per session in the order listed, and `total`."""
    return report_json("sessions", ((shown_name(s.file), _without_file(s.as_dict())) for s in listing.sessions), total=listing.total())


def _without_file(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if key != "file"}


SESSION_COLUMNS = ("agent", "project", "active", "bytes", "tokens", "unsent", "status", "file")
UNMEASURED = "?"  # a session's bytes never sent, where they are not measured


def sessions_tsv(listing: Listing) -> bytes:
    """A session a line, tab-separated: agent, project, last activity (ISO 8601, UTC), bytes,
    tokens, bytes never sent (`?`: not measured), status, file, error (empty fields for what is
    not known)."""
    lines = []
    for s in listing.sessions:
        fields = s.as_dict()
        unsent = UNMEASURED if s.unsent_bytes is None and s.error is None else fields["unsent_bytes"]
        cells = [fields["agent"], fields["project"], fields["last_activity"], fields["bytes"], fields["tokens"],
                 unsent, fields["status"], fields["file"], fields["error"]]
        # Each field on its one line as every message shows a name (`shown_name`: a tab or a line
        # break in it escaped), never another file's name (a space for the break would be one).
        lines.append("\t".join("" if cell is None else shown_name(str(cell)) for cell in cells))
    return "".join(f"{line}\n" for line in lines).encode()


def sessions_total(listing: Listing) -> str:
    """The closing line: `12 sessions: 40.2 MB on disk, 31.0 MB never sent, 1,204,110 tokens; 2 near, 1 over`;
    where some are not measured, `31.0 MB never sent in 9 of them (--unsent measures the other 3)`."""
    total = listing.total()
    statuses = ", ".join(f"{total[status]:,} {status}" for status in ("near", "over") if total[status])
    if total["error"]:
        statuses += f"{', ' if statuses else ''}{counted(total['error'], 'error')}"
    return (f"{counted(total['sessions'], 'session')}: {_bytes(total['bytes'])} on disk, {_bytes(total['unsent_bytes'])} "
            f"never sent{_unsent_measured(total)}, {_n(total['tokens'])} tokens" + (f"; {statuses}" if statuses else ""))


def _unsent_measured(total: Mapping[str, int]) -> str:
    """In how many sessions the bytes never sent are measured, when not in all of them."""
    unknown = total["unsent_unknown"]
    if not unknown:
        return ""
    return f" in {total['sessions'] - total['error'] - unknown:,} of them (--unsent measures the other {unknown:,})"


def rich_sessions(listing: Listing) -> None:
    """The table of a terminal: sizes in KB and MB, the time local, paths under the home as `~/…`,
    a total row; each error under the table."""
    import time

    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    home = os.path.join(os.path.expanduser("~"), "")

    def short(path: str | None) -> str:
        return "-" if path is None else "~/" + path[len(home):] if home != "/" and path.startswith(home) else path

    console = Console()
    wide = console.width >= 120  # the project's column, and the year, on a wide terminal only
    columns = [c for c in SESSION_COLUMNS if wide or c != "project"]
    styles = {"near": "yellow", "over": "bold red", "error": "red"}
    table = Table(title=Text(counted(len(listing.sessions), "session")), title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, title_style="bold")
    for header in columns:
        wraps = header in ("project", "file")
        table.add_column(header, justify="right" if header in ("bytes", "tokens", "unsent") else "left",
                         no_wrap=not wraps, overflow="fold" if wraps else "ellipsis", ratio=1 if wraps else None)
    for s in listing.sessions:
        when = time.strftime("%Y-%m-%d %H:%M" if wide else "%m-%d %H:%M", time.localtime(s.last_activity)) \
            if s.last_activity else "-"
        cells: dict[str, Text | str] = {"agent": Text(s.agent or "-"), "project": Text(short(s.project)), "active": when,
                 "bytes": _bytes(s.bytes), "tokens": "-" if s.tokens is None else _n(s.tokens),
                 "unsent": _bytes(s.unsent_bytes) if s.unsent_bytes is not None else "-" if s.error else UNMEASURED,
                 "status": Text(s.status, style=styles.get(s.status, "")), "file": Text(short(shown_name(s.file)))}
        table.add_row(*(cells[c] for c in columns))
    total = listing.total()
    table.add_section()
    sums = {"agent": "total", "bytes": _bytes(total["bytes"]), "tokens": _n(total["tokens"]),
            "unsent": _bytes(total["unsent_bytes"])}
    table.add_row(*(sums.get(c, "") for c in columns))
    console.print(table)
    if total["unsent_unknown"]:
        console.print(Text(f"unsent: the bytes never sent{_unsent_measured(total)}"))
    for s in listing.sessions:
        if s.error:
            console.print(Text(f"{short(shown_name(s.file))}: {s.error}", style="red"))


def _bytes(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
