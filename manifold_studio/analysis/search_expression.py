"""The map's search box (Qt-free): one text searched over every column of a data set.

Three modes:

- ``contains`` — a case-insensitive substring of any text column or of the label column;
- ``regex`` — a regular expression (Python ``re``, case-insensitive) over the same columns;
- ``expression`` — a condition on the columns, e.g. ``alcohol > 13 and hue < 1``.

An expression is read by a hand-written tokenizer and recursive-descent parser — never
``eval``: numbers, 'text' or "text", column names (a name with spaces or symbols in backticks:
```od280/od315 of diluted wines` > 3``), ``+ - * /``, the comparisons ``< <= > >= == !=`` (chained
as in Python: ``1 < hue < 2``), ``and`` / ``&``, ``or`` / ``|``, ``not`` / ``~`` and parentheses.
The results agree with ``pandas.DataFrame.query`` on the same table (NaN compares false, except
``!=``). Text columns compare with ``==`` and ``!=`` only. Errors name the position (1-based
character) and, for a column that does not exist, the columns that do.

``auto`` (the default) reads ``/.../`` as a regular expression, the text as an expression when it
parses and names a column, and searches it as text otherwise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from manifold_studio.tables.dataset_columns import FEATURE, LABEL, Column
from manifold_studio.tables.search import SearchError, factorize, is_numeric

CONTAINS, REGEX, EXPRESSION, AUTO = "contains", "regex", "expression", "auto"
MODES = (AUTO, CONTAINS, REGEX, EXPRESSION)

_TOKEN_RE = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<quoted>`[^`]*`)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op><=|>=|==|!=|<|>|=|&&|\|\||[-+*/()&|~!])
""", re.VERBOSE)
_KEYWORDS = {"and": "&", "or": "|", "not": "~", "&&": "&", "||": "|", "!": "~"}
_COMPARE = ("<", "<=", ">", ">=", "==", "!=", "=")


@dataclass
class Token:
    kind: str      # number, string, name, op, end
    text: str
    pos: int       # 0-based offset in the expression


@dataclass
class Match:
    mask: np.ndarray    # (n,) bool
    description: str
    mode: str

    @property
    def count(self) -> int:
        return int(self.mask.sum())


def tokenize(text: str) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise SearchError(f"Position {pos + 1}: unexpected character {text[pos]!r} in '{text}'.")
        kind = m.lastgroup
        value = m.group()
        if kind == "quoted":
            kind, value = "name", value[1:-1]
        elif kind == "name" and value.lower() in ("and", "or", "not"):
            kind, value = "op", _KEYWORDS[value.lower()]
        elif kind == "op":
            value = _KEYWORDS.get(value, value)
        if kind != "space":
            tokens.append(Token(kind, value, pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


class _Parser:
    """Recursive descent over the tokens; each rule returns a node tuple."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def fail(self, what: str, tok: Token | None = None):
        tok = tok or self.tok
        got = "the end of the text" if tok.kind == "end" else repr(tok.text)
        raise SearchError(f"Position {tok.pos + 1}: expected {what}, found {got} in '{self.text}'.")

    def take(self, *ops) -> Token | None:
        if self.tok.kind == "op" and self.tok.text in ops:
            self.i += 1
            return self.tokens[self.i - 1]
        return None

    def parse(self):
        if self.tok.kind == "end":
            raise SearchError("Type a condition such as 'alcohol > 13 and hue < 1'.")
        node = self.or_()
        if self.tok.kind != "end":
            self.fail("'and', 'or' or the end of the condition")
        return node

    def or_(self):
        node = self.and_()
        while (t := self.take("|")) is not None:
            node = ("or", node, self.and_(), t.pos)
        return node

    def and_(self):
        node = self.not_()
        while (t := self.take("&")) is not None:
            node = ("and", node, self.not_(), t.pos)
        return node

    def not_(self):
        t = self.take("~")
        return ("not", self.not_(), t.pos) if t is not None else self.compare()

    def compare(self):
        left = self.sum_()
        parts = []
        while (t := self.take(*_COMPARE)) is not None:
            parts.append(("==" if t.text == "=" else t.text, self.sum_(), t.pos))
        if not parts:
            return left
        return ("compare", left, parts)

    def sum_(self):
        node = self.term()
        while (t := self.take("+", "-")) is not None:
            node = ("arith", t.text, node, self.term(), t.pos)
        return node

    def term(self):
        node = self.unary()
        while (t := self.take("*", "/")) is not None:
            node = ("arith", t.text, node, self.unary(), t.pos)
        return node

    def unary(self):
        if (t := self.take("-")) is not None:
            return ("neg", self.unary(), t.pos)
        if self.take("+") is not None:
            return self.unary()
        return self.atom()

    def atom(self):
        tok = self.tok
        if tok.kind == "number":
            self.i += 1
            return ("const", float(tok.text), tok.pos)
        if tok.kind == "string":
            self.i += 1
            return ("const", re.sub(r"\\(.)", r"\1", tok.text[1:-1]), tok.pos)
        if tok.kind == "name":
            self.i += 1
            return ("column", tok.text, tok.pos)
        if self.take("(") is not None:
            node = self.or_()
            if self.take(")") is None:
                self.fail("')'")
            return node
        self.fail("a number, a 'text' or a column name")


def parse(text: str):
    """The syntax tree of an expression (raises :class:`SearchError` naming the position)."""
    return _Parser(text).parse()


def named_sparse_features(text: str, ds, columns) -> list:
    """The feature columns of a sparse data set that the expression ``text`` names but
    ``columns`` leave out (a sparse data set's column list holds its first few features only),
    densified one by one, so that ``CD3E > 1`` finds a gene wherever it is; none when the text
    does not parse or the data are dense."""
    if not getattr(ds, "is_sparse", False) or not ds.feature_names:
        return []
    try:
        asked = {n.casefold() for n in column_names(parse(text))}
    except SearchError:
        return []
    have = {c.name.casefold() for c in columns}
    out = []
    for j, name in enumerate(ds.feature_names):
        if name.casefold() in asked and name.casefold() not in have:
            have.add(name.casefold())
            out.append(Column(name, ds.dense(cols=j), FEATURE))
    return out


def column_names(node) -> list[str]:
    """The column names an expression refers to."""
    if node[0] == "column":
        return [node[1]]
    out = []
    for part in node[1:]:
        if isinstance(part, tuple):
            out += column_names(part)
        elif isinstance(part, list):
            for _op, sub, _pos in part:
                out += column_names(sub)
    return out


class _Evaluator:
    def __init__(self, text: str, columns, n: int):
        self.text, self.n = text, n
        self.by_name = {c.name: c for c in columns}
        self.by_fold = {}
        for c in columns:
            self.by_fold.setdefault(c.name.casefold(), c)

    def column(self, name: str, pos: int):
        col = self.by_name.get(name) or self.by_fold.get(name.casefold())
        if col is None:
            names = ", ".join(self.by_name) or "none"
            raise SearchError(f"Position {pos + 1}: there is no column '{name}'. Columns: {names}.")
        return col

    def value(self, node):
        """(values, is_text) of a value node."""
        kind = node[0]
        if kind == "const":
            return node[1], isinstance(node[1], str)
        if kind == "column":
            col = self.column(node[1], node[2])
            if is_numeric(col.values):
                return np.asarray(col.values, dtype=float), False
            return np.asarray(col.values, dtype=object), True
        if kind == "neg":
            v, text = self.value(node[1])
            if text:
                raise SearchError(f"Position {node[2] + 1}: '-' applies to numbers, not to text.")
            return -v, False
        if kind == "arith":
            _, op, a, b, pos = node
            (va, ta), (vb, tb) = self.value(a), self.value(b)
            if ta or tb:
                raise SearchError(f"Position {pos + 1}: '{op}' applies to numbers, not to text.")
            with np.errstate(all="ignore"):
                return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](va, vb), False
        raise SearchError(f"Position {self._pos(node) + 1}: a condition (true or false) cannot be used "
                          "as a value here.")

    def _pos(self, node) -> int:
        return node[-1] if isinstance(node[-1], int) else node[2][0][2]

    def mask(self, node) -> np.ndarray:
        kind = node[0]
        if kind == "and":
            return self.mask(node[1]) & self.mask(node[2])
        if kind == "or":
            return self.mask(node[1]) | self.mask(node[2])
        if kind == "not":
            return ~self.mask(node[1])
        if kind == "compare":
            left = self.value(node[1])
            out = np.ones(self.n, dtype=bool)
            for op, right_node, pos in node[2]:
                right = self.value(right_node)
                out &= self._compare(left, op, right, pos)
                left = right
            return out
        if kind == "column":
            col = self.column(node[1], node[2])
            if col.values.dtype.kind == "b":
                return np.asarray(col.values, dtype=bool)
        raise SearchError(f"Position {self._pos(node) + 1}: expected a condition such as "
                          f"'{node[1] if kind == 'column' else 'x'} > 1', not a value alone.")

    def _compare(self, left, op, right, pos) -> np.ndarray:
        (a, ta), (b, tb) = left, right
        if ta != tb:
            raise SearchError(f"Position {pos + 1}: '{op}' compares text with a number; compare a text "
                              "column with 'text' and a numeric column with a number.")
        if ta:
            if op not in ("==", "!="):
                raise SearchError(f"Position {pos + 1}: text compares with == and != only, not '{op}'.")
            eq = self._text_equal(a, b)
            return eq if op == "==" else ~eq
        with np.errstate(invalid="ignore"):
            res = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                   "==": np.equal, "!=": np.not_equal}[op](a, b)
        return np.broadcast_to(np.asarray(res, dtype=bool), (self.n,))

    def _text_equal(self, a, b) -> np.ndarray:
        if isinstance(a, str) and isinstance(b, str):
            return np.full(self.n, a == b)
        if isinstance(a, str):
            a, b = b, a
        if isinstance(b, str):
            f = factorize(a)
            hit = np.array([t == b for t in f.texts] + [b == ""], dtype=bool)
            return hit[f.codes]
        return np.asarray(a.astype(str) == b.astype(str), dtype=bool)


def evaluate(text: str, columns, n: int) -> Match:
    """The rows of an ``n``-row table where the expression ``text`` holds."""
    tree = parse(text)
    mask = _Evaluator(text, columns, n).mask(tree)
    return Match(np.ascontiguousarray(mask, dtype=bool), text.strip(), EXPRESSION)


def _text_columns(columns):
    """The columns text search looks in: text columns and the label column (its values as text,
    numbers included, as the data table's search)."""
    return [c for c in columns if getattr(c, "kind", "") == LABEL or not is_numeric(c.values)]


def text_search(text: str, columns, n: int, *, regex: bool = False, factors_of=None) -> Match:
    """Rows where any text or label column contains ``text`` (case-insensitive) or, with
    ``regex``, matches the regular expression anywhere. Each column is factorised once (its
    distinct values searched, not its rows); ``factors_of(col)`` may return a cached one."""
    factors_of = factors_of or (lambda col: factorize(col.values))
    searched = _text_columns(columns)
    if not searched:
        raise SearchError(f"This data set has no text or label column to search for '{text}'; "
                          "use a condition such as 'x > 1'.")
    if regex:
        try:
            pattern = re.compile(text, re.IGNORECASE)
        except re.error as exc:
            raise SearchError(f"Position {(exc.pos or 0) + 1}: not a valid regular expression: {exc.msg}.") from None
        test = pattern.search
    else:
        needle = text.casefold()
        def test(t):
            return needle in t.casefold()
    mask = np.zeros(n, dtype=bool)
    for col in searched:
        f = factors_of(col)
        hit = np.array([bool(test(t)) for t in f.texts] + [False], dtype=bool)
        if hit.any():
            mask |= hit[f.codes]
    where = ", ".join(f"'{c.name}'" for c in searched)
    verb = "matches" if regex else "contains"
    return Match(mask, f"{where} {verb} '{text}'", REGEX if regex else CONTAINS)


def search(text: str, columns, n: int, mode: str = AUTO, factors_of=None) -> Match:
    """The rows matched by ``text`` in ``mode`` (see the module docstring)."""
    if mode not in MODES:
        raise SearchError(f"Search mode {mode!r}: use one of {', '.join(MODES)}.")
    text = (text or "").strip()
    if not text:
        raise SearchError("Type a text to find, a regular expression, or a condition such as "
                          "'alcohol > 13 and hue < 1'.")
    if n == 0:
        raise SearchError("The data set has no rows to search.")
    if mode == EXPRESSION:
        return evaluate(text, columns, n)
    if mode == AUTO and len(text) > 2 and text.startswith("/") and text.endswith("/"):   # /regex/, as the box says
        try:
            re.compile(text[1:-1])
        except re.error as exc:   # the position in the typed text, its first slash counted
            raise SearchError(f"Position {(exc.pos or 0) + 2}: not a valid regular expression: {exc.msg}.") from None
        return text_search(text[1:-1], columns, n, regex=True, factors_of=factors_of)
    if mode == AUTO:
        try:
            tree = parse(text)
        except SearchError:
            if not _text_columns(columns) or re.search(r"[<>=!]", text):
                raise  # meant as a condition (or nothing else to search): say where it breaks
            tree = None
        known = {c.name.casefold() for c in columns}
        if tree is not None and tree[0] != "column" and any(
                name.casefold() in known for name in column_names(tree)):
            return evaluate(text, columns, n)
        if not _text_columns(columns) and tree is not None:
            return evaluate(text, columns, n)  # no text to search: say what is wrong with it
        found = text_search(text, columns, n, factors_of=factors_of)
        if not found.count and tree is not None and tree[0] != "column" and re.search(r"[<>=!]", text):
            return evaluate(text, columns, n)  # a condition on a misspelt column: name the columns
        return found
    return text_search(text, columns, n, regex=mode == REGEX, factors_of=factors_of)
