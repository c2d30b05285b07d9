"""The names of the formats transcompact reads, in the order detection tries them: what --format
accepts. The registry (formats/__init__.py) checks as it is imported that its adapters are these;
they are spelled out here so that parsing the command line's flags does not import every reader.
"""

FORMAT_NAMES = ("claude-code", "codex", "gemini", "pi", "openhands", "openhands-v0", "copilot", "jsonl", "responses",
                "anthropic", "openai")
