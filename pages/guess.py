# SMLserver §2.3: "Guess a number". The number to guess travels in a hidden form
# variable, so the game keeps no state on the server; POST keeps it out of the URL.
import random
import re

from pyweb import csrf_field, qq
from pyweb.forms import get_nat, wrap_opt

from _layout import page


def return_page(title, pic, body):
    game = qq('<div class="game"><img src="{pic}" alt="" width="120" height="120">{body}</div>')
    conn.return_(page(title, game))


def mk_form(n):
    token = csrf_field()  # the site's POSTs need the session's CSRF token
    return qq("""<form action="/guess" method="post">{token}
  <input type="hidden" name="n" value="{n}">
  <input type="text" name="guess" autofocus>
  <input type="submit" value="Guess">
</form>""")


def process_guess(n):
    guess = wrap_opt(get_nat)("guess", max=100)
    typed = conn.form.get("guess", "").strip()
    if guess is None and not re.fullmatch(r"[+-]?[0-9]{1,20}", typed):
        return_page("You must type a number - try again", "/img/guess.svg", mk_form(n))
    elif guess is None:  # a whole number, but not from 0 to 100: say which
        return_page(f"{typed[:20]} is not a number from 0 to 100 - try again",
                    "/img/guess.svg", mk_form(n))  # fmt: skip
    elif guess > n:
        return_page(f"{guess} is too big - try again", "/img/large.svg", mk_form(n))
    elif guess < n:
        return_page(f"{guess} is too small - try again", "/img/small.svg", mk_form(n))
    else:
        return_page(
            "Congratulations!",
            "/img/yes.svg",
            qq('<p>You guessed the number {n}. <a href="/guess">Play again?</a></p>'),
        )


n = wrap_opt(get_nat)("n")
if n is None:  # no game yet: pick a number and ask for the first guess
    return_page(
        "Guess a number between 0 and 100", "/img/guess.svg", mk_form(random.randint(0, 100))
    )
else:
    process_guess(n)
