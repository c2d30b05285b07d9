"""Reading bytes so that they can be written back: byte-order marks, numbers as written, nesting
that can be written, and UTF-8 errors named where they are."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcompact.core.errors import ExitCode, ParseError
from transcompact.core.jsondata import BLANK, BOM, MAX_DEPTH, Layout, kind_of, nested_value, parse, parse_value, plain_value
from transcompact.core.jsondata import dumps as dumps_value
from transcompact.formats import dumps, loads

from .builders import claude_log
from .builders import run_cli as run
from .conftest import FIXTURES


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)




def request(*messages: dict, **fields) -> dict:
    """An Anthropic request body whose third message holds a long tool result, so that prune rewrites it."""
    loop = [
        {"role": "user", "content": "Read it."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"n": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * 5000}]},
        {"role": "assistant", "content": "Read."},
    ]
    return {"system": "s", **fields, "messages": [*loop, *messages, {"role": "user", "content": "Thanks."}]}


PRUNE_ALL = ("prune", "-q", "--keep-last", "0", "--hard-clear-after", "0")


# --- numbers are written back as they were written ----------------------------------------------

NUMBERS = (b'{"big": 123456789012345678901234567890, "negative": -99999999999999999999, "u64": 18446744073709551615,'
           b' "exponent": 1e5, "upper": 1E+05, "zeros": 1.50, "long": 0.1000000000000000055511151231257827,'
           b' "plain": 1.0, "tiny": 5e-324}')


def test_numbers_beside_a_rewritten_field_keep_their_text():
    body = orjson.dumps(request()).replace(b'"system":"s",', b'"system":"s","metadata":' + NUMBERS + b",")
    body = body.replace(b'"input":{"n":1}', b'"input":{"n":1,"seed":98765432109876543210987}')
    open("big.json", "wb").write(body)
    result = run(*PRUNE_ALL, "big.json")
    assert result.exit_code == 0, result.stderr
    assert b"[Tool output cleared" in result.stdout_bytes  # the document was written again
    assert NUMBERS.replace(b": ", b":").replace(b", ", b",") in result.stdout_bytes
    assert b'"seed":98765432109876543210987' in result.stdout_bytes


def test_a_big_integer_in_a_rewritten_jsonl_line_survives():
    lines = [orjson.dumps(m) for m in request()["messages"]]
    lines[2] = lines[2][:-1] + b',"usage":{"id":123456789012345678901234567890,"cost":1e-05}}'
    open("chat.jsonl", "wb").write(b"\n".join(lines) + b"\n")
    result = run(*PRUNE_ALL, "chat.jsonl")
    assert result.exit_code == 0, result.stderr
    rewritten = result.stdout_bytes.splitlines()[2]
    assert b"[Tool output cleared" in rewritten
    assert rewritten.endswith(b'"usage":{"id":123456789012345678901234567890,"cost":1e-05}}')


# JSON, though beyond a double: orjson refuses them, and they were "malformed JSON".
BEYOND_A_DOUBLE = (b'{"overflow": 1e400, "negative": -1E+999, "digits": 1' + b"0" * 308 + b', "many": -' + b"9" * 5000
                   + b', "tiny": 1.5e-400}')


@pytest.mark.parametrize("name", ["request.json", "chat.jsonl"])
def test_numbers_beyond_a_double_are_kept_as_written(name):
    messages = [{"role": "user", "content": "Go."}, {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks."}]
    numbers = b',"usage":' + BEYOND_A_DOUBLE.replace(b": ", b":").replace(b", ", b",") + b"}"
    if name == "request.json":
        data = orjson.dumps({"model": "m", "messages": messages})[:-1] + numbers + b"\n"
    else:
        lines = [orjson.dumps(m) for m in messages]
        data = b"\n".join([lines[0][:-1] + numbers, *lines[1:]]) + b"\n"
    open(name, "wb").write(data)
    assert run("check", "-q", name).exit_code == 0
    pruned = run("prune", "-q", name)  # nothing to prune: written back byte for byte
    assert pruned.exit_code == 0 and pruned.stdout_bytes == data, pruned.stderr
    assert run("estimate", name).exit_code == 0


def test_numbers_beyond_a_double_beside_a_rewritten_field_keep_their_text():
    body = orjson.dumps(request()).replace(b'"system":"s",', b'"system":"s","metadata":' + BEYOND_A_DOUBLE + b",")
    open("big.json", "wb").write(body)
    result = run(*PRUNE_ALL, "big.json")
    assert result.exit_code == 0, result.stderr
    assert b"[Tool output cleared" in result.stdout_bytes  # the document was written again
    assert BEYOND_A_DOUBLE.replace(b": ", b":").replace(b", ", b",") in result.stdout_bytes


def test_an_error_after_a_number_beyond_a_double_is_named_where_it_is_without_one():
    for number in (b"1e400", b"1"):
        with pytest.raises(ParseError) as error:
            parse(b'{"a": ' + number + b',\n "b": "\\x", "c": 1}', "body.json")
        assert str(error.value) == "body.json:2:8: malformed JSON: invalid escaped sequence in string"


# --- a byte-order mark is read and written back ------------------------------------------------


@pytest.mark.parametrize("name, data", [
    ("request.json", orjson.dumps(request(), option=orjson.OPT_INDENT_2) + b"\n"),
    ("chat.jsonl", b"\n".join(orjson.dumps(m) for m in request()["messages"]) + b"\n"),
    ("session.jsonl", claude_log()),
])
def test_a_byte_order_mark_is_kept(name, data):
    open(name, "wb").write(BOM + data)
    assert run("check", name).exit_code == ExitCode.OK
    assert run("repair", "-q", name).stdout_bytes == BOM + data  # nothing to repair: the same bytes
    pruned = run(*PRUNE_ALL, name).stdout_bytes
    assert pruned.startswith(BOM) and not pruned[3:].startswith(BOM)
    assert loads(pruned, name).format == loads(data, name).format


def test_a_byte_order_mark_before_a_rewritten_first_line_is_kept():
    messages = request()["messages"]
    lines = [orjson.dumps(m) for m in [messages[1], messages[2], *messages[1:]]]  # the first line is a result
    data = BOM + b"\n".join(lines)
    transcript = loads(data, "chat.jsonl")
    emptied = transcript.with_messages([transcript.messages[0].with_blocks(()), *transcript.messages[1:]])
    out = dumps(emptied)
    assert out.startswith(BOM + b'{"role":"assistant","content":[]}')


# --- nesting: what cannot be written is refused when read ---------------------------------------


def nested(depth: int) -> bytes:
    """A request whose first message holds a value that makes the document `depth` levels deep."""
    inner = b"[" * (depth - 3) + b"]" * (depth - 3)  # the body, `messages` and a message are the first three
    return orjson.dumps(request()).replace(b'"content":"Read it."', b'"content":"Read it.","x":' + inner, 1)


@pytest.mark.parametrize("command", [
    ["estimate"], ["check"], ["cut-point"], ["repair"], [*PRUNE_ALL], ["compact", "-q", "--emergency", "--force"],
])
def test_the_deepest_writable_nesting_goes_through_every_command(command):
    open("deep.json", "wb").write(nested(MAX_DEPTH))
    result = run(*command, "deep.json")
    assert result.exit_code in (ExitCode.OK, ExitCode.VIOLATIONS), result.stderr


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1024, 1025, 5000])
@pytest.mark.parametrize("command", [["estimate"], ["check"], ["cut-point"], ["repair"], ["prune"], ["compact", "--emergency"]])
def test_nesting_too_deep_to_write_is_an_input_error_naming_where(command, depth):
    open("deep.json", "wb").write(nested(depth))
    result = run(*command, "deep.json")
    assert result.exit_code == ExitCode.INPUT
    column = nested(depth).index(b"[" * (MAX_DEPTH - 2)) + MAX_DEPTH - 3 + 1  # the bracket that is one too many
    assert result.stderr == (f"transcompact: error: deep.json:1:{column}: JSON nested deeper than {MAX_DEPTH} levels, "
                             "which transcompact cannot write back\n")


def test_nesting_too_deep_in_a_jsonl_line_names_the_line():
    lines = [orjson.dumps(m) for m in request()["messages"]]
    lines[3] = b'{"role":"assistant","content":"Read.","x":' + b"[" * 300 + b"]" * 300 + b"}"
    with pytest.raises(ParseError) as raised:
        loads(b"\n".join(lines), "chat.jsonl")
    assert str(raised.value) == f"chat.jsonl:4:{43 + MAX_DEPTH - 1}: JSON nested deeper than {MAX_DEPTH} levels, which transcompact cannot write back"


def test_tool_arguments_nested_too_deep_stay_the_string_they_are():
    arguments = "[" * 300 + "]" * 300
    body = {"messages": [{"role": "user", "content": "go"},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "y" * 5000},
                         {"role": "user", "content": "ok"}]}
    open("deep-args.json", "wb").write(orjson.dumps(body))
    assert run("estimate", "deep-args.json").exit_code == 0
    result = run(*PRUNE_ALL, "--clear-tool-inputs", "deep-args.json")
    assert result.exit_code == 0, result.stderr


# --- UTF-8 --------------------------------------------------------------------------------------


def test_invalid_utf8_in_a_document_names_its_line_and_byte():
    data = orjson.dumps(request(), option=orjson.OPT_INDENT_2).replace(b'"Read."', b'"Re\xffad."')
    open("latin.json", "wb").write(data)
    result = run("check", "latin.json")
    assert result.exit_code == ExitCode.INPUT
    offset = data.index(b"\xff")
    line = data.count(b"\n", 0, offset) + 1
    column = offset - data.rindex(b"\n", 0, offset)
    assert result.stderr.splitlines() == [
        f"transcompact: error: latin.json:{line}:{column}: not valid UTF-8: byte 0xff at byte offset {offset}",
        "hint: transcripts are read as UTF-8: convert the file first, or read it with --encoding-errors replace",
    ]


def test_invalid_utf8_in_a_jsonl_line_names_that_line():
    data = b'{"role":"user","content":"a"}\n{"role":"assistant","content":"caf\xe9"}\n'
    result = run("check", input=data)
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.splitlines()[0] == "transcompact: error: <stdin>:2:35: not valid UTF-8: byte 0xe9 at byte offset 64"


# --- one document or JSON Lines, decided once -----------------------------------------------------


def test_a_document_over_several_lines_is_one_document():
    parsed = parse(b'{\n  "messages": []\n}\n', "body.json")
    assert parsed.document == {"messages": []} and parsed.records is None and parsed.is_document


def test_lines_are_records_with_blank_lines_and_the_text_after_the_final_newline():
    parsed = parse(b'{"role":"user","content":"a"}\n\n{"role":"assistant","content":"b"}\n', "chat.jsonl")
    assert parsed.document is None and not parsed.is_document
    assert [bytes(line) for line, _ in parsed.records] == [b'{"role":"user","content":"a"}', b"", b'{"role":"assistant","content":"b"}', b""]
    assert [value is BLANK for _, value in parsed.records] == [False, True, False, True]
    assert parsed.values() == [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]


@pytest.mark.parametrize("data, records", [
    (b'{"role":"user","content":"a"}\n', True),  # a message: also JSON Lines of one line
    (b'{"type":"summary","summary":"s"}', True),  # a log line
    (b'{"model":"m","messages":[]}\n', False),  # a request body is a document only
    (b'\n\n{"role":"user","content":"a"}\n\n', True),  # blank lines around it: what a rewrite left of a log
    (BOM + b'\n{"role":"user","content":"a"}', True),
])
def test_one_line_is_a_document_and_a_record_only_when_it_could_be_one(data, records):
    parsed = parse(data, "one.json")
    assert parsed.document == orjson.loads(data.removeprefix(BOM)) and parsed.is_document
    assert (parsed.records is not None) is records
    if records:
        assert parsed.values() == [parsed.document] and b"\n".join(bytes(line) for line, _ in parsed.records) == data


def test_repair_that_leaves_one_line_after_a_blank_one_writes_a_file_check_reads():
    """The first line removed (a role the API refuses), a blank line after it: the output, a blank
    line and one message, read as one JSON document that is no transcript (exit 3)."""
    lines = open(FIXTURES / "jsonl" / "chat.jsonl", "rb").read().splitlines()
    data = b"\n".join([lines[0].replace(b'"role": "user"', b'"role": " "'), b"", lines[2]]) + b"\n"
    repaired = run("repair", "-q", "-", input=data)
    assert repaired.exit_code == 0, repaired.stderr
    assert repaired.stdout_bytes == b"\n" + lines[2] + b"\n"
    assert run("check", "-q", "-", input=repaired.stdout_bytes).exit_code == 0


def test_a_broken_first_line_is_a_malformed_document_and_a_broken_later_line_a_malformed_line():
    with pytest.raises(ParseError) as document:
        parse(b'{"a": 1,\n "b": }', "body.json")
    assert str(document.value) == "body.json:2:7: malformed JSON: unexpected character, expected a JSON value"
    assert document.value.hint is None
    with pytest.raises(ParseError) as line:
        parse(b'{"role":"user"}\n{"role":"x"}\n{bad}\n', "chat.jsonl")
    assert str(line.value).startswith("chat.jsonl:3:2: malformed JSON line: ")
    assert line.value.hint == "every line of a JSON Lines file must be one complete JSON value"


def test_parse_value_reads_one_line_as_parse_reads_a_record():
    value = parse_value(b'{"id": 123456789012345678901234567890, "cost": 1e-05, "n": 2}', "archive.jsonl", 7)
    assert orjson.dumps(value) == b'{"id":123456789012345678901234567890,"cost":1e-05,"n":2}'  # numbers as written
    with pytest.raises(ParseError, match=r"^archive\.jsonl:7:7: malformed JSON line: "):
        parse_value(b'{"n": ', "archive.jsonl", 7)


@pytest.mark.parametrize("line", [
    b'{"cost":{"input":0.5,"output":0.002865},"n":2}',  # as orjson writes it: read once
    b'{"cost":{"input":0.000009,"output":0.002865},"n":2}',  # as JavaScript writes it (orjson: 9e-6)
    b'{"cost": 0.000009, "n": 2}',  # spaced: read again too
    b'{"n":-0,"a":[-0,1],"s":"x-0"}',  # an integer -0 (orjson: 0)
    b'{"cost":0.000009,"n":-0}',  # beside a float
])
def test_a_line_with_floats_keeps_each_number_as_written(line):
    (_, value), _ = parse(line + b"\n" + line, "session.jsonl").records
    assert orjson.dumps(value) == line.replace(b" ", b"")
    assert orjson.dumps(nested_value(line, 2)) == line.replace(b" ", b"")  # a value inside a document: the same


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
                    | st.sampled_from(["x", "-0", ": -0", "1.50"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3), max_leaves=8),
       st.sampled_from([b"-0", b"-0.0", b"1.50", b"1e400", b"0"]))
def test_a_plain_value_is_the_value_nested_value_reads_or_none(value, number):
    """`plain_value` gives orjson's reading only where it is `nested_value`'s: a number written
    otherwise (a float, -0, beyond a double) anywhere in the parts it walks, or a -0 anywhere,
    makes it give None."""
    text = orjson.dumps({"parts": value, "more": 1}).replace(b'"more":1', b'"more":' + number)
    plain = plain_value(text, lambda read: [read["parts"], read["more"]])
    if plain is not None:
        assert orjson.dumps(plain) == orjson.dumps(nested_value(text, 1)) == text
    elif number == b"0" and not any(isinstance(v, float) for v in _leaves(value)):
        assert b"-0" in text  # None only for a reason


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


SPELLINGS = ("{!r}", "{:.6f}", "{:e}", "{:E}", "{:.3g}", "{:.2f}0")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(SPELLINGS), st.booleans()),
                min_size=1, max_size=6),
       st.booleans())
def test_a_float_is_kept_as_written_however_it_is_spelled_and_wherever_it_is(numbers, quoted):
    """A float as a member, or in an array, in any spelling, beside a string that holds the same
    value spelled otherwise after a colon: each is written back as it was written."""
    members = []
    for n, (number, spelling, in_an_array) in enumerate(numbers):
        token = spelling.format(number)
        members.append(f'"n{n}":' + (f"[{token},1]" if in_an_array else token))
        if quoted:
            members.append(f'"s{n}":"x:{number!r}"')
    line = ("{" + ",".join(members) + "}").encode()
    (_, value), _ = parse(line + b"\n" + line, "session.jsonl").records
    assert orjson.dumps(value) == line


@pytest.mark.parametrize("cost", [b"0.5", b"0.000009", b"9e-06"])
def test_a_document_indented_as_javascript_writes_it_keeps_each_number_as_written(cost):
    """JSON.stringify(value, null, 2), as Gemini CLI writes its chats: the document is told to be
    as orjson writes it indented by one C pass (not a walk of it); a number written otherwise
    (0.000009, where orjson writes 9e-06) is still kept as written."""
    document = b'{\n  "messages": [\n    {\n      "cost": ' + cost + b',\n      "n": 2\n    }\n  ]\n}\n'
    value = parse(document, "chat.json").document
    assert orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n" == document


def test_kind_of_names_each_json_type_as_errors_say_it():
    assert [kind_of(v) for v in ({}, [], "", True, None, 1, 1.5)] == [
        "an object", "an array", "a string", "a boolean", "null", "a number", "a number"]


@pytest.mark.parametrize("data, layout", [
    (b'{"a":1}', Layout()),
    (b'{\n  "a": 1\n}\n', Layout(indent=True, newline=True)),
    (b'{\n\t"a": 1\n}', Layout(indent=True)),
    (BOM + b'{"a":1}\n', Layout(newline=True, bom=True)),
], ids=["compact", "two-spaces", "tab", "bom"])
def test_the_layout_of_a_document_is_seen_and_written_again(data, layout):
    assert Layout.of(data) == layout
    out = layout.dumps({"a": 1})
    assert Layout.of(out) == layout and orjson.loads(out.removeprefix(BOM)) == {"a": 1}


# --- a log written as its lines ----------------------------------------------------------------


def pruned_log(data: bytes):
    from transcompact.ops.pruning.prune import PruneOptions, prune

    transcript = loads(data)
    return transcript, prune(transcript, PruneOptions(keep_last=0, hard_clear_after=0))[0]


@pytest.mark.parametrize("data", [claude_log(), BOM + claude_log()], ids=["plain", "byte-order-mark"])
def test_a_log_rewritten_is_its_lines_and_keeps_the_input_records_it_did_not_change(data):
    """A large log is written without a copy of the whole: its unchanged lines are the input's own
    records (a view into the input and the value read from it), and the new lines are given by
    their values, serialised as they are written."""
    import pickle

    from transcompact.core.jsondata import Lines, same_bytes
    from transcompact.formats import written

    transcript, pruned = pruned_log(data)
    lines = written(pruned)
    assert isinstance(lines, Lines)
    assert bytes(lines) == b"".join(lines.chunks()) == dumps(pruned) and len(lines) == len(dumps(pruned))
    kept = [record for record in lines.records if record in transcript.source.records]
    assert 0 < len(kept) < len(lines.records)
    assert all(any(record is old for old in transcript.source.records) for record in kept)
    assert all(line is None for line, _ in lines.records[1:] if not any(line is old for old, _ in transcript.source.records))
    assert not same_bytes(lines, data) and same_bytes(written(transcript), data)
    assert pickle.loads(pickle.dumps(lines)) == bytes(lines)  # how a worker process hands it over
    assert bytes(lines).startswith(BOM) == data.startswith(BOM)


def test_a_log_rewritten_as_it_was_is_told_from_its_input_without_joining_its_lines(monkeypatch):
    """A rewrite that changed nothing is not written back: its lines are compared with the input
    where they are (a large log's output is not joined whole to be compared), to the last byte."""
    from transcompact.core.jsondata import Lines, same_bytes

    data = b'{"a":1}\n{"b":2}\n'
    records = [(memoryview(data)[0:7], {"a": 1}), (memoryview(data)[8:15], {"b": 2}), (memoryview(data)[16:16], None)]
    monkeypatch.setattr(Lines, "__bytes__", lambda self: pytest.fail("joined whole"))
    assert same_bytes(Lines(records), data)
    assert not same_bytes(Lines([records[0], (b'{"b":3}', {"b": 3}), records[2]]), data)  # the same length, a byte apart
    assert not same_bytes(Lines(records[:2]), data) and not same_bytes(Lines(records), data + b"\n")


def test_the_post_condition_reads_back_the_new_lines_of_a_log_from_their_bytes():
    from transcompact.core.errors import PostConditionError
    from transcompact.core.jsondata import Lines
    from transcompact.formats import written
    from transcompact.ops.validity.postcondition import verified

    transcript, pruned = pruned_log(claude_log())
    lines = written(pruned)
    assert verified(transcript, pruned, lines, operation="prune").messages == pruned.messages
    new = next(i for i, (line, _) in enumerate(lines.records) if line is None)  # made anew: given by its value
    value = lines.records[new][1]
    line = dumps_value(value, indent=False)
    for wrong in (line.replace(b"output cleared", b"output changed"), line[:-1]):  # reads as other text; does not parse
        tampered = Lines([*lines.records[:new], (wrong, value), *lines.records[new + 1:]])
        with pytest.raises(PostConditionError, match="prune would write output that"):
            verified(transcript, pruned, tampered, operation="prune")


@pytest.mark.parametrize("line", [
    # The member's JSON first in a nested object: found there, the result would not read as the edit.
    b'{"message":{"content":[{"toolUseResult":{"stdout":"ok"}}]},"toolUseResult":{"stdout":"ok"},"uuid":"u1"}',
    b'{"toolUseResult":{"stdout":"ok"},"uuid":"u1","cwd":"/p","nested":{"cwd":"/p"}}',
    b'{"uuid":"u1", "toolUseResult" : {"stdout": "ok"} ,"cwd":"/p"}',  # written with spaces: found by scanning
    b'{"cwd":"/p","uuid":"u1","toolUseResult":{"n":1.50},"x":[1,2]}',  # a number as written
    # The first member and the one after it: two cuts over its comma.
    b'{"isSidechain":false,"userType":"external","uuid":"u1","message":{"cwd":"/q"}}',
])
def test_members_taken_out_leave_every_other_byte_and_read_as_the_edit(line):
    from transcompact.core.jsondata import without_members

    value = parse_value(line, "log.jsonl", 1)
    edits = {"toolUseResult": None, "cwd": None, "uuid": b'"u2"', "isSidechain": None, "userType": None}
    edits = {key: new for key, new in edits.items() if key in value}
    for known in (value, None):  # found by its JSON, and by scanning
        cut, taken, read = without_members(line, edits, known)
        out = bytes(cut)
        assert cut.source is line and len(cut) == len(out)  # the parts of the line kept, not a copy
        expected = {k: v for k, v in value.items() if edits.get(k, b"") is not None} | {
            k: orjson.loads(new) for k, new in edits.items() if new is not None}
        assert orjson.loads(out) == orjson.loads(dumps_value(expected, indent=False))
        assert read is not None and dumps_value(read, indent=False) == dumps_value(parse_value(out, "out", 1), indent=False)
        assert sum(taken.values()) == len(line) - len(out)
        if b"nested" in line:
            assert out.endswith(b',"nested":{"cwd":"/p"}}')


def test_a_line_read_in_part_reads_after_a_cut_as_its_part_edited():
    """A line as its agent writes it, each member taken out written once: the cut is proven
    without reading the new line, which reads as the part of the line kept, edited alike."""
    from transcompact.core.jsondata import PartialLine, without_members

    line = b'{"parentUuid":"a0","cwd":"/p","uuid":"a1","message":{"content":[{"text":"cwd"}]},"toolUseResult":{"stdout":"ok"}}'
    view = PartialLine(parentUuid="a0", uuid="a1")
    view.seen = ("sizes",)
    out, taken, read = without_members(line, {"cwd": None, "toolUseResult": None, "parentUuid": b'"root"'}, None, view)
    assert bytes(out) == b'{"parentUuid":"root","uuid":"a1","message":{"content":[{"text":"cwd"}]}}'
    assert type(read) is PartialLine and read == {"parentUuid": "root", "uuid": "a1"} and read.seen == ("sizes",)
    assert taken == {"cwd": len(b',"cwd":"/p"'), "toolUseResult": len(b',"toolUseResult":{"stdout":"ok"}'), "parentUuid": -2}


KEYS = ("cwd", "uuid", "toolUseResult", "isSidechain", "message")
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["/p", "u1", "", 'a"b', "é"]))
# Objects whose members may repeat the top-level ones, key and value alike, at any depth.
members_like = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)), max_leaves=8)


@given(value=st.dictionaries(st.sampled_from(KEYS), members_like, min_size=1), data=st.data(),
       spaced=st.booleans())
@settings(max_examples=300, deadline=None)
def test_a_cut_reads_as_its_edit_however_the_members_repeat_below(value, data, spaced):
    """Taking members out of an object, or giving them a value, leaves one that reads as the
    object edited, whether the same members sit in nested objects or not, written compact (the
    cut then proven without reading it again) or spaced (read again); a view of it stays one."""
    from transcompact.core.jsondata import PartialLine, without_members

    line = (json.dumps(value, separators=(", ", ": ")) if spaced else orjson.dumps(value).decode()).encode()
    keys = data.draw(st.lists(st.sampled_from(sorted(value)), min_size=1, unique=True))
    edits = {key: (None if data.draw(st.booleans()) else b'"new"') for key in keys}
    view = PartialLine((k, v) for k, v in value.items() if k in ("uuid", "isSidechain"))
    view.seen = ("sizes",)
    for known, part in ((value, None), (None, None), (None, view)):
        cut, taken, read = without_members(line, edits, known, part)
        out = bytes(cut)
        assert len(cut) == len(out)
        expected = {k: v for k, v in value.items() if edits.get(k, b"") is not None} | {
            k: "new" for k, new in edits.items() if new is not None}
        assert orjson.loads(out) == expected
        assert sum(taken.values()) == len(line) - len(out)
        if part is None:
            assert read == expected
        else:
            assert type(read) is PartialLine and read.seen == ("sizes",)
            assert read == {k: v for k, v in expected.items() if k in ("uuid", "isSidechain")}


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False) | st.text("ab", max_size=2),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner, max_size=3),
                     max_leaves=12)


@given(_JSON, _JSON)
def test_a_value_read_again_shares_with_the_input_what_is_equal_and_nothing_else(value, was):
    """What a rewrite's read-back holds of a changed message: the same value, each part equal to the
    input's at the same place (same type, same bits) the input's own object, so not held twice."""
    from transcompact.core.jsondata import shared_with

    shared = shared_with(value, was)
    assert orjson.dumps(shared) == orjson.dumps(value)  # -0.0 stays -0.0, 1 stays 1 where 1.0 was
    if type(value) is type(was) and orjson.dumps(value) == orjson.dumps(was):
        assert shared is was


_FIGURES = st.dictionaries(st.text(max_size=4), st.integers(-9, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
                           | st.text(alphabet='ab"\\{}[],: é', max_size=5), max_size=4)


@given(_FIGURES, st.dictionaries(st.text(max_size=4), _FIGURES, max_size=2), st.booleans(), st.integers(0, 10**6))
def test_a_member_is_added_last_to_an_object_written_once_in_place(figures, nested, spaced, new):
    """pi's usage, which an older pi wrote without `totalTokens`: the member goes last into the
    object its key names, every other byte as written (not copied), however the line is spaced and
    whatever its strings hold; an object holding an array, or nested deeper, is left alone."""
    from transcompact.core.jsondata import with_member_added

    usage = {**figures, **nested}
    usage.pop("total", None)
    value = {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": 'a "usage" {'}],
                                            "usage": usage}}
    line = memoryview((json.dumps(value, separators=(", ", ": ")) if spaced else orjson.dumps(value).decode()).encode())
    cut = with_member_added(line, "usage", "total", new)
    assert cut is not None and cut.source is line
    out = bytes(cut)
    assert json.loads(out) == {**value, "message": {**value["message"], "usage": {**usage, "total": new}}}
    member = (b"," if usage else b"") + b'"total":' + str(new).encode()  # the usage is the line's last member
    assert out == bytes(line)[:-3] + member + bytes(line)[-3:]
    for deeper in ({"cost": [1]}, {"cost": {"by": {"input": 1}}}):
        held = orjson.dumps({**value, "message": {**value["message"], "usage": deeper}})
        assert with_member_added(held, "usage", "total", new) is None
    assert with_member_added(orjson.dumps({**value, "usage": usage}), "usage", "total", new) is None  # written twice


def test_a_member_written_once_is_replaced_in_place_and_one_written_twice_is_not():
    """A line as orjson writes it holds each member as its key and its value's JSON: a key written
    once is the member, at any depth, and is replaced there, every other byte kept (not copied)."""
    from transcompact.core.jsondata import with_member_replaced

    value = {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": 'a "usage": b'}],
                                              "usage": {"input_tokens": 3, "cache_read_input_tokens": 900}}}
    line = memoryview(orjson.dumps(value))
    restated = {"input_tokens": 3, "cache_read_input_tokens": 650}
    cut = with_member_replaced(line, "usage", value["message"]["usage"], restated)
    assert cut is not None and cut.source is line
    assert bytes(cut) == orjson.dumps({**value, "message": {**value["message"], "usage": restated}})
    assert with_member_replaced(line, "usage", {"input_tokens": 4}, restated) is None  # not the value it holds
    twice = {**value, "usage": value["message"]["usage"]}
    assert with_member_replaced(orjson.dumps(twice), "usage", value["message"]["usage"], restated) is None


@pytest.mark.parametrize("escape", [b"\\ud800", b"\\udfff", b"\\ud83dx", b"\\ud83d\\u0041"])
def test_a_lone_surrogate_escape_reads_as_the_replacement_character_and_keeps_its_bytes(escape):
    """JSON.stringify writes a string cut inside a character so (valid JSON, which orjson refuses):
    found using the tool as a user, every command refused such a log as malformed JSON."""
    from transcompact import PruneOptions, dumps, loads, prune

    lines = [b'{"role":"user","content":"hi ' + escape + b'"}']
    for n in range(4):
        lines += [b'{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"sh",'
                  b'"arguments":"{}"}}]}' % n, b'{"role":"tool","tool_call_id":"c%d","content":"%s ' % (n, b"x" * 3000) + escape + b'"}']
    data = b"\n".join(lines) + b"\n"
    transcript = loads(data, "s.jsonl")
    assert "\ufffd" in transcript.messages[0].blocks[0].text and dumps(transcript) == data
    pruned, report = prune(transcript, PruneOptions(keep_last=0, hard_clear_after=0))
    assert report.cleared == 4 and dumps(pruned).startswith(lines[0] + b"\n")
