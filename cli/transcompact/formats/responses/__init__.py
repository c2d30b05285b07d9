"""OpenAI Responses API request bodies (`input` items): the reader and writer, and its rewrites.
"""
