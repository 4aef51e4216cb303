"""Services (Hop §2.1): functions bound to URLs, their parameters typed form variables.

This file defines services, so it is a *service module*: imported once when the site
loads, not run per request like a script.
"""

import random
from functools import partial
from typing import Annotated

from pyweb import csrf_field, qq, service
from pyweb.forms import Nat, get_nat
from pyweb.html import P

from _layout import page

# Hop's hello-ast: a tree built once, at import, and returned by every request.
HELLO = page("Hello", P("Hello, world!"), source="hop_services.py")


@service("/svc/hello")
async def hello():
    return HELLO


# A natural number with a bound of our own: the getter for the annotation is given directly.
Small = Annotated[int, partial(get_nat, max=30)]


@service("/svc/mul")
async def mul(n: Small):
    """An n x n multiplication table (n up to 30); /svc/mul?n=abc is a 400 page naming n."""
    rows = qq("").join(
        qq(
            "<tr>{cells}</tr>\n",
            cells=qq("").join(qq("<td>{p}</td>", p=i * j) for j in range(1, n + 1)),
        )
        for i in range(1, n + 1)
    )
    # rows is passed by name: a checker cannot see that qq reads the caller's variables
    return page(f"{n} × {n}", qq('<table class="mul">\n{rows}</table>', rows=rows))


def _guess_page(title, body):
    return page(title, qq('<div class="game">{body}</div>', body=body))


def _form(n):
    token = csrf_field()  # the site's POSTs need the session's CSRF token
    return qq("""<form action="/svc/guess" method="post">{token}
  <input type="hidden" name="n" value="{n}"><input type="text" name="guess" autofocus>
  <input type="submit" value="Guess"></form>""")


@service("/svc/guess", methods=["GET", "POST"])  # GET starts a game, its form POSTs guesses
async def guess(n: Nat | None = None, guess: Nat | None = None):
    """The guessing game as a service: ``T | None`` is the paper's wrapOpt."""
    if n is None:
        return _guess_page("Guess a number between 0 and 100", _form(random.randint(0, 100)))
    if guess is None:
        return _guess_page("You must type a number - try again", _form(n))
    if guess > n:
        return _guess_page(f"{guess} is too big - try again", _form(n))
    if guess < n:
        return _guess_page(f"{guess} is too small - try again", _form(n))
    return _guess_page(
        "Congratulations!",
        qq('<p>You guessed the number {n}. <a href="/svc/guess">Play again?</a></p>'),
    )
