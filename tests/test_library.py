"""The library as a person uses it: every operation importable from the package, the README's example runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import transcompact

README = Path(__file__).resolve().parent.parent / "README.md"
DOCUMENTED = ["Cut", "CompactOptions", "CompactReport", "Estimate", "EstimateOptions", "ExitCode", "Fix", "Message",
              "PruneOptions", "PruneReport", "RepairReport", "Summary", "SummaryOptions", "Transcript", "TranscompactError",
              "Violation", "check", "compact", "context_management", "convert", "diff", "dump", "dumps", "estimate", "expand",
              "find_cut_point", "load", "loads",
              "prune", "repair", "sessions", "Session", "slim", "SlimReport", "summarize",
              # the errors (docs/errors.md's tree)
              "Location", "UsageError", "InputError", "ParseError", "UnknownFormat", "ShapeError", "InstallationError",
              "ProviderError", "PromptTooLong", "RefusedByCommand", "OutputError", "PostConditionError", "InternalError"]


def test_every_operation_is_importable_from_the_package():
    assert transcompact.__all__ == sorted(DOCUMENTED)
    for name in transcompact.__all__:
        assert getattr(transcompact, name) is not None, name
    assert callable(transcompact.compact) and callable(transcompact.find_cut_point)


def test_the_readme_library_example_runs(monkeypatch, tmp_path):
    section = README.read_text().split("## As a library", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    exec(compile(code, "README.md", "exec"), {})


def test_load_and_dump_take_files_loads_and_dumps_bytes(tmp_path):
    data = (README.parent / "fixtures/anthropic/tool-loop.json").read_bytes()
    transcript = transcompact.load(README.parent / "fixtures/anthropic/tool-loop.json")
    assert transcript == transcompact.loads(data) and transcompact.dumps(transcript) == data
    transcompact.dump(transcript, tmp_path / "out.json")
    assert (tmp_path / "out.json").read_bytes() == data
    assert transcompact.loads(data.decode()) == transcript  # a str, read as its UTF-8
    with pytest.raises(TypeError, match="^loads reads a transcript from bytes or a str, not NoneType$"):
        transcompact.loads(None)  # type: ignore[arg-type]
    with pytest.raises(transcompact.UsageError, match="^lazily='bogus' is none of False, True, 'logs', 'rereads'$"):
        transcompact.loads(data, lazily="bogus")  # type: ignore[arg-type]  # (it was read as a truthy laziness)


@pytest.mark.parametrize(("call", "message"), [
    (lambda t: transcompact.prune(t, transcompact.PruneOptions(keep_last=-1)), "keep_last must be 0 or more, not -1"),
    (lambda t: transcompact.prune(t, transcompact.PruneOptions(keep_tool_uses=-2)), "keep_tool_uses must be 0 or more, not -2"),
    (lambda t: transcompact.find_cut_point(t, keep_recent_tokens=-1), "keep_recent_tokens must be 0 or more, not -1"),
    (lambda t: transcompact.SummaryOptions(keep_recent_tokens=-5), "keep_recent_tokens must be 0 or more, not -5"),
    # (found using the library as a user: NaN protected nothing, or ended in a bare ValueError)
    (lambda t: transcompact.PruneOptions(keep_last=float("nan")), "keep_last must be a whole number, not nan"),
    (lambda t: transcompact.PruneOptions(keep_tool_uses=2.5), "keep_tool_uses must be a whole number, not 2.5"),
    (lambda t: transcompact.find_cut_point(t, float("nan")), "keep_recent_tokens must be a whole number, not nan"),
    (lambda t: transcompact.CompactOptions(threshold=float("nan")), "threshold must be a finite number above 0, not nan"),
    (lambda t: transcompact.CompactOptions(threshold=-5), "threshold must be a finite number above 0, not -5"),
    (lambda t: transcompact.CompactOptions(max_output=-1), "max_output must be 0 or more, not -1"),
    (lambda t: transcompact.estimate(t, transcompact.EstimateOptions(ratio=float("nan"))), "ratio must be a finite number above 0, not nan"),
])
def test_a_negative_count_is_refused_to_a_library_caller_as_to_the_command_line(call, message):
    """A UsageError naming the parameter, where a negative keep_last protected nothing and a
    negative keep_tool_uses cleared every result (found using the library as a user)."""
    transcript = transcompact.load(README.parent / "fixtures/anthropic/long-session.json")
    with pytest.raises(transcompact.UsageError) as refused:
        call(transcript)
    assert str(refused.value) == message


def test_every_rewrite_returns_the_transcript_and_a_report():
    transcript = transcompact.load(README.parent / "fixtures/anthropic/long-session.json")
    for operation in (transcompact.prune, transcompact.repair, transcompact.compact):
        rewritten, report = operation(transcript)
        assert isinstance(rewritten, transcompact.Transcript) and isinstance(report.as_dict(), dict), operation


def test_every_error_class_is_exported_from_the_package():
    """`except transcompact.InputError:` works for every error the library raises."""
    import inspect

    import transcompact
    from transcompact.core import errors

    defined = {name for name, value in inspect.getmembers(errors, inspect.isclass)
               if issubclass(value, errors.TranscompactError) and value.__module__ == errors.__name__}
    assert defined <= set(transcompact.__all__)
    assert all(getattr(transcompact, name) is getattr(errors, name) for name in defined)


@pytest.mark.parametrize("lazily", [False, True])
@pytest.mark.parametrize("shape", ["body", "list", "nested"])
@pytest.mark.parametrize("lone", [b"", b" \\ud800"], ids=["", "with-a-lone-surrogate"])
def test_a_rewrite_writes_the_messages_it_left_as_their_bytes_however_they_were_read(lazily, shape, lone):
    """Escapes and spacing of an untouched message stay as written (found using the library: a
    transcript read whole lost every `\\u00e9` of the messages prune did not change; then, by a
    review, every message of a document that holds a lone surrogate escape anywhere)."""
    messages = [b'{"role": "user", "content": "caf\\u00e9 \\u2713' + lone + b'"}']
    for n in range(8):
        messages += [b'{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"ls"}}]}' % n,
                     b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]}' % (n, b"x" * 9000)]
    array = b"[" + b",\n  ".join(messages) + b"]"
    data, path = {"body": (b'{"model": "m", "messages": ' + array + b"}", None), "list": (array, None),
                  "nested": (b'{"trajectory": [{"messages": ' + array + b"}]}", "trajectory.0.messages")}[shape]
    transcript = transcompact.loads(data, "t.json", lazily=lazily, messages_path=path)
    pruned, report = transcompact.prune(transcript)
    assert report.cleared and messages[0] in transcompact.dumps(pruned)
