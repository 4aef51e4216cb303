# SMLserver §2.3: "Guess a number". The number to guess travels in a hidden form
# variable, so the game keeps no state on the server; POST keeps it out of the URL.
import random

from pyweb import csrf_field, qq
from pyweb.forms import get_nat, wrap_opt


def return_page(title, pic, body):
    conn.return_(
        qq("""<!DOCTYPE html>
<html><head><title>{title}</title><link rel="stylesheet" href="/style.css"></head>
<body><center>
<h2>{title}</h2>
<img src="{pic}" alt="" width="120" height="120">
{body}
<p><i>Served by <a href="/">pyweb</a></i></p>
</center></body></html>""")
    )


def mk_form(n):
    token = csrf_field()  # the site's POSTs need the session's CSRF token
    return qq("""<form action="/guess" method="post">{token}
  <input type="hidden" name="n" value="{n}">
  <input type="text" name="guess" autofocus>
  <input type="submit" value="Guess">
</form>""")


def process_guess(n):
    guess = wrap_opt(get_nat)("guess")
    if guess is None:
        return_page("You must type a number - try again", "/img/guess.svg", mk_form(n))
    elif guess > n:
        return_page("Your guess is too big - try again", "/img/large.svg", mk_form(n))
    elif guess < n:
        return_page("Your guess is too small - try again", "/img/small.svg", mk_form(n))
    else:
        return_page(
            "Congratulations!",
            "/img/yes.svg",
            qq('You guessed the number {n}. <a href="/guess">Play again?</a>'),
        )


n = wrap_opt(get_nat)("n")
if n is None:  # no game yet: pick a number and ask for the first guess
    return_page(
        "Guess a number between 0 and 100", "/img/guess.svg", mk_form(random.randint(0, 100))
    )
else:
    process_guess(n)
