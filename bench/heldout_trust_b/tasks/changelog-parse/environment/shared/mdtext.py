"""Team helpers for Markdown text."""
import re


def strip_links(text: str) -> str:
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
