class TokenError(ValueError):
    def __init__(self, position, char):
        super().__init__(f"unexpected {char!r} at {position}")
        self.position = position


OPERATORS = set("+-*/()")


def tokenize(expr):
    tokens, i = [], 0
    while i < len(expr):
        ch = expr[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit():
            j = i
            while j < len(expr) and (expr[j].isdigit() or expr[j] == "."):
                j += 1
            tokens.append(("num", expr[i:j]))
            i = j
        elif ch.isalpha():
            j = i
            while j < len(expr) and expr[j].isalnum():
                j += 1
            tokens.append(("name", expr[i:j]))
            i = j
        elif ch in OPERATORS:
            tokens.append(("op", ch))
            i += 1
        else:
            raise TokenError(i, ch)
    return tokens
