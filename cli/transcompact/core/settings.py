"""Every default, once: the option dataclasses of the library and the flags of the command line
read them from here (the spec's values unless a later decision changed them: docs/design.md §7). Cheap to import: no
imports at all, since every command's start-up loads it.
"""

# prune (the spec's Layer 1)
SOFT_TRIM_CHARS = 4000
HEAD = 1500
TAIL = 1500
HARD_CLEAR_AFTER = 6
KEEP_LAST = 2

# prune --by-kind (an earlier design's truncation by kind): a result over the cap is cut by the kind of output its tool gives
RESULT_TOKEN_CAP = 4000

# prune in the names of Anthropic's context editing (context_editing.py)
CLEAR_AT_LEAST = 0  # tokens an edit of the tool results must save (0: any edit is made)
KEEP_THINKING_TURNS = 1  # with --clear-thinking: the last turns that keep their thinking
TOOL_KINDS = {  # tool name, in lower case → kind (truncate.py); any other tool's output is `generic`
    **dict.fromkeys(("bash", "bashoutput", "shell", "terminal", "run_terminal_command", "run_shell_command",
                     "exec_command", "execute_bash", "local_shell", "gdb_command"), "head-tail"),
    **dict.fromkeys(("grep", "glob", "search", "search_codebase", "search_file_content", "find", "read_lints",
                     "websearch", "web_search"), "matches"),
    **dict.fromkeys(("read", "read_file", "read_many_files", "view", "fs", "notebookread"), "file"),
}

# reading
ENCODING_ERRORS = "strict"  # invalid UTF-8 is an input error; "replace" reads it as U+FFFD

# counting (the spec's TokenEstimator: chars × ratio + 4 per message)
RATIO = 0.25
TOKENIZER = "chars"
COUNT = "usage"  # anchored on recorded usage when a transcript has it; "content": only what it holds
TOP = 5

# the window, the budget and when to compact
WINDOW = 200_000
MAX_OUTPUT = 16_000
THRESHOLD = 100_000  # a value <= 1 is a fraction of the input budget
WARN_AT = 0.5  # estimate's `warning` status from this fraction of the threshold (an earlier design's)
KEEP_RECENT_TOKENS = 20_000
KEEP_RECENT_MESSAGES = 0  # the recent window's least number of messages (the earlier designs kept 6 or 10)

# compact
KEEP_USER_TOKENS = 4000
CHECKPOINT_TOKENS = 2500

# summarize
RESULT_CHARS = 2000
STYLES = ("checkpoint", "narrative")  # the summary's form: the spec's sections, or a prose account
STYLE = "checkpoint"

# compact's line per file on stderr: a sentence, or the CI form of an earlier design
LOG_FORMAT = "human"
SUMMARY_INPUT_TOKENS = 150_000
PROVIDER = "anthropic"
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-5.4-mini"}  # the summarizer per provider: current and cheap
BASE_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
TIMEOUT = 60.0
RETRIES = 2

# compact --batch-api
POLL_INTERVAL = 60.0  # seconds between two looks at a batch (most end within the hour, all within 24 h)

# sessions
SESSIONS_SORT = "activity"  # the newest activity first (docs/sessions.md)
