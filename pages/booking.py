# A form declared once (pyweb.forms.Form, after Racket's formlets), its fields typed with
# FormVar's getters (SMLserver §2.3): the class renders the form and parses it back, every
# bad field listed beside its box. A GET shows the form; a POST checks it.
import datetime

from pyweb import qq
from pyweb.forms import Date, Email, Form, Nat, field

from _layout import page


class Booking(Form):
    name: str = field("Name", max_length=100)
    email: Email = field("E-mail")
    arrival: Date = field("Arrival")
    nights: Nat = field("Nights (1 to 30)", min=1, max=30)  # the label's range, and the check's


if conn.method != "POST":
    conn.return_(page("Book a room", Booking().render(action="/booking", submit="Book")))
else:
    booking = Booking.parse()  # every field checked; the bad ones keep what was typed
    if not booking.ok:
        # 400: the form again, with each message beside its field (nothing was booked).
        conn.return_(
            page("Book a room", booking.render(action="/booking", submit="Book")), status=400
        )
    elif booking.arrival < datetime.date.today():
        # Each field is fine on its own, the request as a whole is not: 422.
        conn.return_(
            page(
                "Not booked",
                qq('<p class="message">{booking.arrival} is in the past: choose a day from today on.</p>'),
                booking.render(action="/booking", submit="Book"),
            ),
            status=422,
        )
    else:
        conn.return_(
            page(
                "Booked",
                qq("""<p class="ok">{booking.name}, we expect you on {booking.arrival} for {booking.nights} night(s).
A confirmation goes to {booking.email}.</p>"""),
            )
        )
