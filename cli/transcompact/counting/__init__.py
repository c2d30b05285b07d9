"""Tokens: `tokenizers` (chars × ratio, tiktoken's, Anthropic's count_tokens), `models` (each
model's window and reply headroom), `counter` (a transcript's count, each message once, anchored on
the usage it recorded) and `calibrate` (the fit against a log's recorded usage).
"""
