# FormVar's wrap_fail (SMLserver §2.3): check every field, then one page listing all the
# bad ones. A GET shows the form; a POST checks it.
import datetime

from pyweb import csrf_field, qq
from pyweb.forms import get_date, get_email, get_nat, get_string, wrap_fail

from _layout import page


def form():
    token = csrf_field()  # the hidden field every POST form carries (CSRF protection)
    return qq("""<form action="/booking" method="post">{token}
<p><label>Name <input name="name"></label></p>
<p><label>E-mail <input name="email" type="email"></label></p>
<p><label>Arrival <input name="arrival" type="date"></label></p>
<p><label>Nights (1 to 30) <input name="nights"></label></p>
<p><input type="submit" value="Book"></p>
</form>""")


if conn.method != "POST":
    conn.return_(page("Book a room", form()))
else:
    name = wrap_fail(get_string)("name", max_length=100)
    email = wrap_fail(get_email)("email")
    arrival = wrap_fail(get_date)("arrival")
    nights = wrap_fail(get_nat)("nights", min=1, max=30)  # the label's range, and the error's
    # If any field was bad, pyweb answers one 400 page naming every bad field, whatever
    # the page does next; so the rest may assume good values.
    if arrival < datetime.date.today():
        # Each field is fine on its own, the request as a whole is not: 422.
        conn.return_(
            page(
                "Not booked",
                qq('<p class="message">{arrival} is in the past: choose a day from today on.</p>'),
                form(),
            ),
            status=422,
        )
    else:
        conn.return_(
            page(
                "Booked",
                qq("""<p class="ok">{name}, we expect you on {arrival} for {nights} night(s).
A confirmation goes to {email}.</p>"""),
            )
        )
