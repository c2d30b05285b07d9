"""The command line: the click group (`main`), its commands, and how results are rendered.
"""
