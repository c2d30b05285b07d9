"""Every default, once: the option dataclasses of the library and the flags of the command line
read them from here (seed 003's values unless an issue said otherwise). Cheap to import: no
imports at all, since every command's start-up loads it.
"""

# prune (seed 003, Layer 1)
SOFT_TRIM_CHARS = 4000
HEAD = 1500
TAIL = 1500
HARD_CLEAR_AFTER = 6
KEEP_LAST = 2

# reading
ENCODING_ERRORS = "strict"  # invalid UTF-8 is an input error; "replace" reads it as U+FFFD

# counting (seed 003 TokenEstimator: chars × ratio + 4 per message)
RATIO = 0.25
TOKENIZER = "chars"
COUNT = "usage"  # anchored on recorded usage when a transcript has it; "content": only what it holds
TOP = 5

# the window, the budget and when to compact
WINDOW = 200_000
MAX_OUTPUT = 16_000
THRESHOLD = 100_000  # a value <= 1 is a fraction of the input budget
KEEP_RECENT_TOKENS = 20_000

# compact
KEEP_USER_TOKENS = 4000
CHECKPOINT_TOKENS = 2000

# summarize
RESULT_CHARS = 2000
SUMMARY_INPUT_TOKENS = 150_000
PROVIDER = "anthropic"
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o-mini"}  # the summarizer per provider
BASE_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
TIMEOUT = 60.0
RETRIES = 2
