#!/bin/bash
cat > /app/calc.py <<'PY'
import re
import sys
from fractions import Fraction

TOKEN = re.compile(r"\s*(?:(\d+)|(.))")


class Syntax(Exception):
    pass


def tokens(text):
    out = []
    for number, op in TOKEN.findall(text.strip()):
        if number:
            out.append(Fraction(int(number)))
        elif op in "+-*/()":
            out.append(op)
        elif op.strip():
            raise Syntax
    return out


def parse(toks):
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        if pos >= len(toks):
            raise Syntax
        pos += 1
        return toks[pos - 1]

    def expr():
        value = term()
        while peek() in ("+", "-"):
            value = value + term() if take() == "+" else value - term()
        return value

    def term():
        value = unary()
        while peek() in ("*", "/"):
            if take() == "*":
                value *= unary()
            else:
                rhs = unary()
                if rhs == 0:
                    raise ZeroDivisionError
                value /= rhs
        return value

    def unary():
        if peek() == "-":
            take()
            return -unary()
        tok = take()
        if tok == "(":
            value = expr()
            if take() != ")":
                raise Syntax
            return value
        if isinstance(tok, Fraction):
            return tok
        raise Syntax

    value = expr()
    if pos != len(toks):
        raise Syntax
    return value


for line in sys.stdin.read().splitlines():
    try:
        v = parse(tokens(line))
        print(v.numerator if v.denominator == 1 else f"{v.numerator}/{v.denominator}")
    except ZeroDivisionError:
        print("error: division by zero")
    except Syntax:
        print("error: syntax")
PY
