def render_table(rows: list, columns: list) -> str:
    raise NotImplementedError
