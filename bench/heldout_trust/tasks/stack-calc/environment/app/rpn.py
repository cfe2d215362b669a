import operator

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def evaluate(expr: str) -> float:
    stack = []
    for tok in expr.split():
        if tok in OPS:
            a = stack.pop()
            b = stack.pop()
            stack.append(OPS[tok](a, b))
        else:
            stack.append(float(tok))
    if len(stack) != 1:
        raise ValueError("malformed expression")
    return stack[0]
