"""The command line, in the order a run goes through it: `main` (the click group, its one error
handler, the commands loaded when they run), `options` (the flags the commands share, and what
they become), `commands` (one module per command), `render` (reports as text, tables and JSON).
"""
