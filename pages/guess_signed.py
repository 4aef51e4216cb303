# The guessing game's fixed twin. guess.py keeps the number in a hidden form field, so a
# player can read it (view source) or change it (send n=5 and guess 5: "Congratulations!").
# Here the hidden field holds the number *signed* with the site's secret key
# (pyweb.signing): the player still carries the game, the server still keeps no state, but a
# changed field no longer verifies and the game starts again. (Reading is still possible:
# a signature proves who wrote a value, it does not hide it; see docs/sessions.md.)
import random

from pyweb import csrf_field, qq, signing
from pyweb.forms import get_nat, lookup, wrap_opt

from _layout import page

SALT = "guess"  # a token signed for this game is refused anywhere else


def return_page(title, pic, body):
    game = qq("""<div class="game"><img src="{pic}" alt="" width="120" height="120">{body}
<p><i>The number is signed (compare <a href="/guess">the game that can be cheated</a>).</i></p>
</div>""")
    conn.return_(page(title, game))


def mk_form(n):
    signed = signing.sign(n, salt=SALT)
    token = csrf_field()
    return qq("""<form action="/guess_signed" method="post">{token}
  <input type="hidden" name="n" value="{signed}">
  <input type="text" name="guess" autofocus>
  <input type="submit" value="Guess">
</form>""")


def hidden_number():
    """The number in the form, if its signature holds; None for no game or a forged one."""
    sent = lookup("n")
    if sent is None:
        return None
    try:
        n = signing.unsign(sent, salt=SALT, max_age=24 * 3600)
    except signing.BadSignature:
        return "forged"
    return n if isinstance(n, int) else "forged"


def process_guess(n):
    guess = wrap_opt(get_nat)("guess")
    if guess is None:
        return_page("You must type a number - try again", "/img/guess.svg", mk_form(n))
    elif guess > n:
        return_page(f"{guess} is too big - try again", "/img/large.svg", mk_form(n))
    elif guess < n:
        return_page(f"{guess} is too small - try again", "/img/small.svg", mk_form(n))
    else:
        return_page(
            "Congratulations!",
            "/img/yes.svg",
            qq('<p>You guessed the number {n}. <a href="/guess_signed">Play again?</a></p>'),
        )


n = hidden_number()
if n is None:
    return_page(
        "Guess a number between 0 and 100", "/img/guess.svg", mk_form(random.randint(0, 100))
    )
elif n == "forged":
    return_page(
        "That game was changed on the way: a new one starts",
        "/img/guess.svg",
        mk_form(random.randint(0, 100)),
    )
else:
    process_guess(n)
