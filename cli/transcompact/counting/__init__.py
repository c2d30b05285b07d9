"""Tokens: the tokenizers and the calibration against a log's recorded usage.
"""
