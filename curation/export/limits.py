"""Default caps of the exports, in a module light enough for the CLI to import at startup."""

DEFAULT_MAX_MESSAGE_CHARS = 1_000_000
"""Largest message (content + reasoning + tool-call arguments, in characters) an SFT export keeps."""

DEFAULT_MAX_TASK_FILE_BYTES = 10 * 2**20
"""Largest file a task row carries; larger ones are listed in `skipped`."""
