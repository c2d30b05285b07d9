"""Validity, in pipeline order: `check` (the providers' and agents' rules, with stable ids),
`repair` (the smallest change that meets them), `postcondition` (what every rewrite must leave:
no error its input did not have)."""
