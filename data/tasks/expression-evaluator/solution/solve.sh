#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/calc.py <<'EOF'
import math
import re

TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_]\w*)|(?P<op>[-+*/%^(),]))")


class CalcError(ValueError):
    def __init__(self, message, position):
        super().__init__(f"{message} at position {position}")
        self.position = position


def tokenize(expr):
    tokens, pos = [], 0
    while pos < len(expr):
        if expr[pos].isspace():
            pos += 1
            continue
        m = TOKEN.match(expr, pos)
        if not m:
            raise CalcError(f"unexpected character {expr[pos]!r}", pos)
        kind = m.lastgroup
        start = m.start(kind)
        tokens.append((kind, m.group(kind), start))
        pos = m.end()
    tokens.append(("end", "", len(expr)))
    return tokens


class Parser:
    def __init__(self, expr, variables):
        self.toks, self.i, self.vars = tokenize(expr), 0, variables or {}

    def peek(self):
        return self.toks[self.i]

    def take(self):
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, value):
        kind, text, pos = self.peek()
        if text != value or kind != "op":
            raise CalcError(f"expected {value!r}", pos)
        self.take()

    def parse(self):
        value = self.expr()
        kind, text, pos = self.peek()
        if kind != "end":
            raise CalcError(f"unexpected {text!r}", pos)
        return value

    def expr(self):
        value = self.term()
        while self.peek()[1] in ("+", "-") and self.peek()[0] == "op":
            op = self.take()[1]
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        return value

    def term(self):
        value = self.unary()
        while self.peek()[1] in ("*", "/", "%") and self.peek()[0] == "op":
            _, op, pos = self.take()
            rhs = self.unary()
            if op == "*":
                value *= rhs
            elif rhs == 0:
                raise CalcError("division by zero", pos)
            else:
                value = value / rhs if op == "/" else value % rhs
        return value

    def unary(self):
        if self.peek()[0] == "op" and self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            value = self.unary()
            return -value if op == "-" else value
        return self.power()

    def power(self):
        base = self.atom()
        if self.peek()[0] == "op" and self.peek()[1] == "^":
            self.take()
            return float(base ** self.unary())
        return base

    def atom(self):
        kind, text, pos = self.take()
        if kind == "num":
            return float(text)
        if kind == "name":
            if self.peek()[1] == "(" and self.peek()[0] == "op":
                self.take()
                args = []
                if not (self.peek()[0] == "op" and self.peek()[1] == ")"):
                    args.append(self.expr())
                    while self.peek()[0] == "op" and self.peek()[1] == ",":
                        self.take()
                        args.append(self.expr())
                self.expect(")")
                return self.call(text, args, pos)
            if text not in self.vars:
                raise CalcError(f"unknown variable {text!r}", pos)
            return float(self.vars[text])
        if kind == "op" and text == "(":
            value = self.expr()
            self.expect(")")
            return value
        raise CalcError(f"unexpected {text or 'end of input'!r}", pos)

    def call(self, name, args, pos):
        if name in ("sqrt", "abs"):
            if len(args) != 1:
                raise CalcError(f"{name} takes one argument", pos)
            if name == "sqrt":
                if args[0] < 0:
                    raise CalcError("sqrt of a negative number", pos)
                return math.sqrt(args[0])
            return abs(args[0])
        if name in ("min", "max"):
            if not args:
                raise CalcError(f"{name} needs at least one argument", pos)
            return float(min(args) if name == "min" else max(args))
        raise CalcError(f"unknown function {name!r}", pos)


def evaluate(expr, variables=None):
    return float(Parser(expr, variables).parse())
EOF
