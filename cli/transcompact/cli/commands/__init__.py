"""One module per command: parse its flags, call the library, render.
"""
