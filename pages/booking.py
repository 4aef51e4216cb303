# FormVar's wrap_fail (SMLserver §2.3): check every field, then one page listing all the
# bad ones. A GET shows the form; a POST checks it.
from pyweb import csrf_field, qq
from pyweb.forms import get_date, get_email, get_nat, get_string, wrap_fail

FORM = """<!DOCTYPE html>
<html><head><title>Book a room</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>Book a room</h1>
<form action="/booking" method="post">{token}
<p><label>Name <input name="name"></label></p>
<p><label>E-mail <input name="email" type="email"></label></p>
<p><label>Arrival <input name="arrival" type="date"></label></p>
<p><label>Nights (1 to 30) <input name="nights"></label></p>
<p><input type="submit" value="Book"></p>
</form></body></html>"""

if conn.method != "POST":
    token = csrf_field()  # the hidden field every POST form carries (CSRF protection)
    conn.return_(qq(FORM))
else:
    name = wrap_fail(get_string)("name", max_length=100)
    email = wrap_fail(get_email)("email")
    arrival = wrap_fail(get_date)("arrival")
    nights = wrap_fail(get_nat)("nights", max=30)
    # If any field was bad, pyweb answers one 400 page naming every bad field, whatever
    # the page does next; so the rest may assume good values.
    if nights == 0:
        conn.return_("<p>Zero nights? Nothing to book.</p>", status=422)
    else:
        conn.return_(
            qq("""<!DOCTYPE html>
<html><head><title>Booked</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>Booked</h1>
<p>{name}, we expect you on {arrival} for {nights} night(s). A confirmation goes to {email}.</p>
</body></html>""")
        )
