"""One module per command; `cli.py` imports a command's module only when that command runs."""
