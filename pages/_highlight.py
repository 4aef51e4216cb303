"""Python source as highlighted HTML, with Python's own tokenizer (for ``source.py``).

Each token is put in a ``<span>`` by kind: keywords (``k``), strings (``s``), comments
(``c``), numbers (``m``), the names after ``def`` and ``class`` (``f``); the stylesheet
colours them. Everything is escaped: a page's source is shown, never run or interpreted.
"""

import html
import io
import keyword
import tokenize

KINDS = {tokenize.STRING: "s", tokenize.COMMENT: "c", tokenize.NUMBER: "m"}
if hasattr(tokenize, "FSTRING_START"):  # 3.12+: f-strings come in pieces
    for kind in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END"):
        KINDS[getattr(tokenize, kind)] = "s"


def _kind(token, previous):
    if token.type == tokenize.NAME:
        if keyword.iskeyword(token.string) or token.string in ("await", "async"):
            return "k"
        if previous in ("def", "class"):
            return "f"
        return None
    return KINDS.get(token.type)


def highlight(source):
    """``source`` (text) as HTML lines, each starting with its line number."""
    lines = source.splitlines()
    marked = [html.escape(line) for line in lines]  # the fallback: no colours
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = []
    if tokens:
        spans = {}  # line -> [(start col, end col, kind)]
        previous = None
        for token in tokens:
            kind = _kind(token, previous)
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                previous = token.string
            if kind is None:
                continue
            (row, col), (end_row, end_col) = token.start, token.end
            for r in range(row, end_row + 1):
                start = col if r == row else 0
                end = end_col if r == end_row else len(lines[r - 1])
                spans.setdefault(r, []).append((start, end, kind))
        marked = []
        for number, line in enumerate(lines, 1):
            out, at = [], 0
            for start, end, kind in sorted(spans.get(number, [])):
                out.append(html.escape(line[at:start]))
                out.append(f'<span class="{kind}">{html.escape(line[start:end])}</span>')
                at = end
            out.append(html.escape(line[at:]))
            marked.append("".join(out))
    width = len(str(len(lines)))
    return "\n".join(
        f'<span class="n">{number:>{width}}</span>  {text}'
        for number, text in enumerate(marked, 1)
    )
