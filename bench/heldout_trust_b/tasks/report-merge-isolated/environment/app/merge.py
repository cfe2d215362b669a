"""Merging of per-region metrics reports."""


def merge_reports(a: dict, b: dict) -> dict:
    raise NotImplementedError
